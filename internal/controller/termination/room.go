package termination

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	"github.com/nodewright/nodewright/internal/learned"
	"github.com/nodewright/nodewright/internal/observe"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// RoomChecker tells which pods of draining nodes should not be evicted yet
// because no ready node has room for them (see NoRoom).
type RoomChecker interface {
	NoRoom(ctx context.Context, now time.Time) (map[types.UID]string, error)
}

// Room answers RoomChecker from the cluster as the cache holds it. One
// answer serves every drain for MaxAge, so that ten nodes draining at once
// cost one simulation, not ten.
type Room struct {
	Client  client.Client
	Cloud   cloudprovider.CloudProvider
	Learned *learned.Store
	MaxAge  time.Duration

	mu   sync.Mutex
	at   time.Time
	last map[types.UID]string
}

// NoRoom implements RoomChecker.
func (r *Room) NoRoom(ctx context.Context, now time.Time) (map[types.UID]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last != nil && now.Sub(r.at) < r.MaxAge && !now.Before(r.at) {
		return r.last, nil
	}
	seen, err := observe.List(ctx, r.Client, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, err
	}
	poolTypes, _, _ := provisioning.ResolveTypes(ctx, r.Cloud, r.Learned, seen.Cluster.NodePools, seen.Overlays)
	def := provisioning.DefaultOptions()
	res := snapshot.Build(&seen.Cluster, poolTypes, snapshot.Options{Now: now, MoveDraining: true,
		NominationGrace: def.NominationGrace, UntriedAfter: def.UntriedAfter})
	out, err := NoRoom(res)
	if err != nil {
		return nil, err
	}
	r.at, r.last = now, out
	return out, nil
}

// NoRoom finds the pods the drains will evict (res built with
// MoveDraining) that no ready node can take now but a new or starting
// node could: evicted now, they would sit pending until it is up, with
// nowhere to run. It places them with the pending pods on the ready nodes
// and on new NodeClaims; nodes still starting are left out, so a pod whose
// only room is on one waits for it too. A pod that fits nowhere at all is
// not held: waiting would not help it.
func NoRoom(res *snapshot.Result) (map[types.UID]string, error) {
	out := map[types.UID]string{}
	if len(res.Draining) == 0 {
		return out, nil
	}
	in := *res.Input
	in.Nodes = nil
	for _, n := range res.Input.Nodes {
		if !n.InFlight {
			in.Nodes = append(in.Nodes, n)
		}
	}
	plan, err := solver.Solve(&in)
	if err != nil {
		return nil, fmt.Errorf("simulating where the drained pods go: %w", err)
	}
	for _, nc := range plan.NewClaims {
		for _, pod := range nc.Pods {
			if _, ok := res.Draining[pod.UID]; ok {
				out[pod.UID] = fmt.Sprintf("no ready node has room for it; a node of NodePool %s would", nc.NodePool)
			}
		}
	}
	return out, nil
}

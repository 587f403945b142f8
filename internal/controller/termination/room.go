package termination

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	"github.com/nodewright/nodewright/internal/learned"
	"github.com/nodewright/nodewright/internal/observe"
	"github.com/nodewright/nodewright/internal/room"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// RoomChecker tells which pods of draining nodes should not be evicted yet
// because no ready node has room for them (see NoRoom).
type RoomChecker interface {
	NoRoom(ctx context.Context, claim string, now time.Time) (map[types.UID]string, error)
	// Forget drops a remembered answer: pods were just evicted, and their
	// replacements take room the answer counted as free.
	Forget()
}

// Room answers RoomChecker from the cluster as the cache holds it. One
// answer serves every drain for MaxAge, so that ten nodes draining at once
// cost one simulation, not ten.
type Room struct {
	Client  client.Client
	Cloud   cloudprovider.CloudProvider
	Learned *learned.Store
	MaxAge  time.Duration
	// Stores, when set, are the cache's informer stores an answer reads the
	// cluster from (see observe.Stores); nil lists through Client.
	Stores *observe.Stores

	mu   sync.Mutex
	at   time.Time
	last map[types.UID]string
	// draining are the claims the last answer saw being deleted: one it
	// did not see needs a new answer, or its pods would be evicted
	// unchecked.
	draining map[string]bool
}

// NoRoom implements RoomChecker for the drain of claim.
func (r *Room) NoRoom(ctx context.Context, claim string, now time.Time) (map[types.UID]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last != nil && r.draining[claim] && now.Sub(r.at) < r.MaxAge && !now.Before(r.at) {
		return r.last, nil
	}
	seen, err := r.Stores.Look(ctx, r.Client)
	if err != nil {
		return nil, err
	}
	poolTypes, _, _ := provisioning.ResolveTypes(ctx, r.Cloud, r.Learned, seen.Cluster.NodePools, seen.Overlays)
	def := provisioning.DefaultOptions()
	res := snapshot.Build(&seen.Cluster, poolTypes, snapshot.Options{Now: now, MoveDraining: true,
		NominationGrace: def.NominationGrace, UntriedAfter: def.UntriedAfter})
	res.Input.Pods = append(res.Input.Pods, awaitedReplacements(res)...)
	out, err := NoRoom(res)
	if err != nil {
		return nil, err
	}
	r.draining = map[string]bool{}
	for _, nc := range seen.Cluster.NodeClaims {
		if nc.DeletionTimestamp != nil {
			r.draining[nc.Name] = true
		}
	}
	r.at, r.last = now, out
	return out, nil
}

// Forget implements RoomChecker.
func (r *Room) Forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = nil
}

// NoRoom finds the pods the drains will evict (res built with
// MoveDraining) that no ready node can take now but a new or starting
// node could: evicted now, they would sit pending until it is up, with
// nowhere to run. Pods already pending are ahead of them in
// kube-scheduler's queue and take the ready room the moment it frees, so
// they are placed first, on the ready nodes only (those nominated to a
// starting node too: they bind wherever they fit). The drained pods are
// then placed on what is left and on new NodeClaims; nodes still starting
// are left out, so a pod whose only room is on one waits for it. A pod that
// fits nowhere at all is not held: waiting would not help it. Packing finds
// room that kube-scheduler, taking the pods one by one and spreading them,
// may not: a drained pod it would strand is held too (holdHomeless).
func NoRoom(res *snapshot.Result) (map[types.UID]string, error) {
	out := map[types.UID]string{}
	if len(res.Draining) == 0 {
		return out, nil
	}
	var ready []solver.Node
	var pending, drained []*corev1.Pod
	for _, n := range res.Input.Nodes {
		if !n.InFlight {
			ready = append(ready, n)
			continue
		}
		for _, p := range n.Pods {
			if p.Spec.NodeName == "" {
				pending = append(pending, p)
			}
		}
	}
	for _, p := range res.Input.Pods {
		if _, ok := res.Draining[p.UID]; ok {
			drained = append(drained, p)
		} else {
			pending = append(pending, p)
		}
	}
	if len(pending) > 0 {
		first := *res.Input
		first.Nodes, first.Pods, first.NodePools = ready, pending, nil
		plan, err := solver.Solve(&first)
		if err != nil {
			return nil, fmt.Errorf("simulating where the pending pods go: %w", err)
		}
		at := map[string]int{}
		ready = append([]solver.Node(nil), ready...)
		for i, n := range ready {
			at[n.Name] = i
		}
		for _, pl := range plan.Placements {
			if i, ok := at[pl.Node]; ok && pl.NewClaim < 0 {
				n := &ready[i]
				n.Pods = append(append([]*corev1.Pod(nil), n.Pods...), pl.Pod)
			}
		}
	}
	in := *res.Input
	in.Nodes, in.Pods = ready, drained
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
	return out, holdHomeless(res, plan, out)
}

// holdHomeless adds to out the drained pods that plan packed onto ready
// nodes but that kube-scheduler, placing the pods ahead of them first and
// spreading each, would find no ready node for (room.Homeless), if a
// starting or new node could take them; the provisioner launches that
// node (provisioning's roomApart).
func holdHomeless(res *snapshot.Result, plan *solver.Plan, out map[types.UID]string) error {
	homeless := room.Homeless(res)
	var stranded []*corev1.Pod
	for _, pl := range plan.Placements {
		if pl.NewClaim < 0 && homeless[pl.Pod.UID] {
			stranded = append(stranded, pl.Pod)
		}
	}
	if len(stranded) == 0 {
		return nil
	}
	apart := *res.Input
	apart.Pods, apart.Nodes = stranded, nil
	for _, n := range res.Input.Nodes {
		if n.InFlight {
			apart.Nodes = append(apart.Nodes, n)
		}
	}
	plan, err := solver.Solve(&apart)
	if err != nil {
		return fmt.Errorf("simulating where the stranded drained pods go: %w", err)
	}
	for _, pl := range plan.Placements {
		where := "a starting node"
		if pl.NewClaim >= 0 {
			where = "a node of NodePool " + plan.NewClaims[pl.NewClaim].NodePool
		}
		out[pl.Pod.UID] = "kube-scheduler would give the ready nodes' room to the pods ahead of it in its queue; " + where + " would take it"
	}
	return nil
}

package provisioning

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/internal/solver"
)

// roomApart plans again, away from the ready nodes, the pods of draining
// nodes that kube-scheduler would find no ready node for (room.Homeless)
// but that plan packed onto one. The drain holds such a pod until there
// is room kube-scheduler's way (termination.NoRoom), so the room must come
// from a node that is starting or a new one; left on a ready node in the
// plan, nothing would be launched for it and the drain would wait in vain.
// The pods are placed on the starting nodes, with what plan put there, or
// on new NodeClaims of their own.
func roomApart(in *solver.Input, plan *solver.Plan, homeless map[types.UID]bool) (*solver.Plan, error) {
	if len(homeless) == 0 {
		return plan, nil
	}
	ready := map[string]bool{}
	for _, n := range in.Nodes {
		if !n.InFlight {
			ready[n.Name] = true
		}
	}
	var moved []*corev1.Pod
	keep := make([]solver.Placement, 0, len(plan.Placements))
	onto := map[string][]*corev1.Pod{}
	for _, pl := range plan.Placements {
		switch {
		case pl.NewClaim < 0 && ready[pl.Node] && homeless[pl.Pod.UID]:
			moved = append(moved, pl.Pod)
			continue
		case pl.NewClaim < 0:
			onto[pl.Node] = append(onto[pl.Node], pl.Pod)
		}
		keep = append(keep, pl)
	}
	if len(moved) == 0 {
		return plan, nil
	}
	apart := *in
	apart.Pods, apart.Nodes = moved, nil
	for _, n := range in.Nodes {
		if n.InFlight {
			n.Pods = append(append([]*corev1.Pod(nil), n.Pods...), onto[n.Name]...)
			apart.Nodes = append(apart.Nodes, n)
		}
	}
	more, err := solver.Solve(&apart)
	if err != nil {
		return nil, fmt.Errorf("planning room apart for %d pods of draining nodes: %w", len(moved), err)
	}
	out := &solver.Plan{Placements: keep, NewClaims: append(append([]*solver.NewClaim(nil), plan.NewClaims...), more.NewClaims...),
		Unschedulable: append(append([]solver.Unschedulable(nil), plan.Unschedulable...), more.Unschedulable...)}
	for _, pl := range more.Placements {
		if pl.NewClaim >= 0 {
			pl.NewClaim += len(plan.NewClaims)
		}
		out.Placements = append(out.Placements, pl)
	}
	return out, nil
}

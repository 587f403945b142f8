package planner

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/solver"
)

// ReclaimAttrition is the provisioner's side of drain by attrition: when a
// plan needs new nodes while nodes drain by attrition, it plans again as if
// they took pods, and if that needs fewer new nodes, it returns that plan
// and the draining nodes it puts pods on, whose taint must come off. Room
// already paid for is used before more is bought.
func ReclaimAttrition(in *solver.Input, plan *solver.Plan) (*solver.Plan, map[string]bool, error) {
	if len(plan.NewClaims) == 0 {
		return plan, nil, nil
	}
	draining := map[string]bool{}
	alt := *in
	alt.Nodes = make([]solver.Node, len(in.Nodes))
	copy(alt.Nodes, in.Nodes)
	for i := range alt.Nodes {
		n := &alt.Nodes[i]
		var kept []corev1.Taint
		for _, t := range n.Taints {
			if t.Key == AttritionTaintKey {
				draining[n.Name] = true
				continue
			}
			kept = append(kept, t)
		}
		if draining[n.Name] {
			n.Taints = kept
		}
	}
	if len(draining) == 0 {
		return plan, nil, nil
	}
	other, err := solver.Solve(&alt)
	if err != nil {
		return nil, nil, fmt.Errorf("planning with the nodes that drain by attrition: %w", err)
	}
	if len(other.NewClaims) >= len(plan.NewClaims) {
		return plan, nil, nil
	}
	used := map[string]bool{}
	for _, pl := range other.Placements {
		if draining[pl.Node] {
			used[pl.Node] = true
		}
	}
	return other, used, nil
}

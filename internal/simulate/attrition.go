package simulate

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/solver"
)

// reclaimAttrition mirrors the provisioner's reclaimAttrition
// (internal/controller/provisioning/attrition.go), which is unexported:
// when a plan needs new nodes while nodes drain by attrition, plan again
// as if they took pods, and keep that plan if it launches fewer nodes; the
// draining nodes it uses lose their taint. It only rearranges two
// solver.Solve calls; keep it in step with the original until that one is
// exported and this copy can go.
func reclaimAttrition(in *solver.Input, plan *solver.Plan) (*solver.Plan, map[string]bool, error) {
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
			if t.Key == planner.AttritionTaintKey {
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
	if err != nil || len(other.NewClaims) >= len(plan.NewClaims) {
		return plan, nil, err
	}
	used := map[string]bool{}
	for _, pl := range other.Placements {
		if draining[pl.Node] {
			used[pl.Node] = true
		}
	}
	return other, used, nil
}

package provisioning

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// reclaimAttrition is the provisioner's side of drain by attrition: when a
// plan needs new nodes while nodes drain by attrition, it plans again as if
// they took pods, and if that needs fewer new nodes, it returns that plan
// and the draining nodes it puts pods on, whose taint must come off. Room
// already paid for is used before more is bought.
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

// stopAttrition takes the attrition taint off nodes the plan puts pods on.
func (p *Provisioner) stopAttrition(ctx context.Context, cluster *snapshot.Cluster, nodes map[string]bool) {
	for _, n := range cluster.Nodes {
		if !nodes[n.Name] {
			continue
		}
		before := n.DeepCopy()
		after := n.DeepCopy()
		after.Spec.Taints = nil
		for _, t := range n.Spec.Taints {
			if t.Key != planner.AttritionTaintKey {
				after.Spec.Taints = append(after.Spec.Taints, t)
			}
		}
		if err := p.Client.Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "taking a node back from drain by attrition", "node", n.Name)
			continue
		}
		log.FromContext(ctx).Info("taking a node back from drain by attrition", "node", n.Name)
		p.Recorder.Eventf(n, corev1.EventTypeNormal, "AttritionStopped", "Pending pods need its room; no new node is launched for them")
	}
}

package provisioning

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/snapshot"
)

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

package kwok

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// syncUnhealthy plays UnhealthyAnnotation on a Node; held reports that the
// fault holds it, so that nothing else the agent plays (a notReady window)
// lets kwok have it back.
func (p *Provider) syncUnhealthy(ctx context.Context, node *corev1.Node, now time.Time) (held bool, err error) {
	plan := planUnhealthy(node, now)
	logger := log.FromContext(ctx).WithValues("node", node.Name)
	if plan.Err != nil {
		// The recorder folds repeats of one event into a count, so a pass
		// a second does not flood the Node's events.
		p.event(node, corev1.EventTypeWarning, UnhealthyInvalidReason, plan.Err.Error()+"; the Node is left healthy")
	}
	// The label comes before the status, and goes before it too: kwok must
	// not see the broken condition without the label, nor the label without
	// the condition it then reports healthy.
	_, wasHeld := node.Annotations[UnhealthySinceAnnotation]
	if plan.Hold || plan.Release {
		orig := node.DeepCopy()
		what := "releasing it from the unhealthy fault"
		if plan.Hold {
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			if node.Annotations == nil {
				node.Annotations = map[string]string{}
			}
			node.Labels[NotReadyLabel] = "true"
			what = "holding it unhealthy"
			if !wasHeld {
				node.Annotations[UnhealthySinceAnnotation] = plan.Since.UTC().Format(time.RFC3339)
			}
		} else {
			delete(node.Labels, NotReadyLabel)
			delete(node.Annotations, UnhealthySinceAnnotation)
		}
		if err := p.client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
			return plan.Held, fmt.Errorf("Node %s: %s: %w", node.Name, what, err)
		}
	}
	if len(plan.Conditions) > 0 {
		orig := node.DeepCopy()
		for _, want := range plan.Conditions {
			setCondition(node, want)
		}
		// A strategic merge patch changes these conditions alone, whoever
		// wrote the others.
		if err := p.client.Status().Patch(ctx, node, client.StrategicMergeFrom(orig)); err != nil {
			return plan.Held, fmt.Errorf("Node %s: writing the conditions of the unhealthy fault: %w", node.Name, err)
		}
	}
	switch {
	case plan.Hold && !wasHeld:
		logger.Info("unhealthy fault on: the Node is held from kwok", "value", node.Annotations[UnhealthyAnnotation])
		p.event(node, corev1.EventTypeNormal, UnhealthyReason, fmt.Sprintf("kwok fault injection: the Node is unhealthy until annotation %s is removed", UnhealthyAnnotation))
	case plan.Release:
		logger.Info("unhealthy fault off: kwok reports the Node again")
	}
	return plan.Held, nil
}

// setCondition replaces the Node's condition of want's type, or adds it.
func setCondition(node *corev1.Node, want corev1.NodeCondition) {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == want.Type {
			node.Status.Conditions[i] = want
			return
		}
	}
	node.Status.Conditions = append(node.Status.Conditions, want)
}

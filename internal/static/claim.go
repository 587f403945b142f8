package static

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/solver"
)

// NewClaim is the NodeClaim a static NodePool launches: the cheapest
// instance type its requirements (minValues included) allow that has room
// for the DaemonSet pods the node will run.
//
// It asks the solver to place one pod that asks for nothing and tolerates
// every taint on a cluster of this NodePool alone, so the choice of type,
// offering and minValues is the provisioner's own, not a second copy of it.
func NewClaim(pool solver.NodePool, daemonSets []*appsv1.DaemonSet) (*solver.NewClaim, error) {
	pool.Limits, pool.Usage = nil, nil // replicas and limits.nodes are counted by Decide
	placeholder := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "static-replica", Namespace: "nodewright", UID: "static-replica"},
		Spec: corev1.PodSpec{
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "replica"}},
		},
	}
	plan, err := solver.Solve(&solver.Input{NodePools: []solver.NodePool{pool}, Pods: []*corev1.Pod{placeholder}, DaemonSets: daemonSets})
	if err != nil {
		return nil, fmt.Errorf("choosing an instance type for static NodePool %s: %w", pool.Name, err)
	}
	if len(plan.NewClaims) != 1 {
		why := "no instance type fits"
		if len(plan.Unschedulable) > 0 && plan.Unschedulable[0].Reason != nil {
			why = plan.Unschedulable[0].Reason.String()
		}
		return nil, fmt.Errorf("static NodePool %s can launch no node: %s", pool.Name, why)
	}
	c := plan.NewClaims[0]
	c.Pods = nil
	return c, nil
}

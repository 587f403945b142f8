package nodeclaim

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func setCondition(nc *karpv1.NodeClaim, typ string, status metav1.ConditionStatus, reason, msg string) bool {
	return meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: nc.Generation,
	})
}

func isTrue(nc *karpv1.NodeClaim, typ string) bool {
	return meta.IsStatusConditionTrue(nc.Status.Conditions, typ)
}

// since is when a condition last changed, or zero.
func since(nc *karpv1.NodeClaim, typ string) time.Time {
	if c := meta.FindStatusCondition(nc.Status.Conditions, typ); c != nil {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// setReady keeps the Ready condition the conjunction of the lifecycle
// conditions, as Karpenter's status does.
func setReady(nc *karpv1.NodeClaim) {
	for _, t := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
		if !isTrue(nc, t) {
			setCondition(nc, karpv1.ConditionTypeReady, metav1.ConditionFalse, "Not"+t, t+" is not yet true")
			return
		}
	}
	setCondition(nc, karpv1.ConditionTypeReady, metav1.ConditionTrue, "Ready", "")
}

// ephemeralTaints are put on nodes by Kubernetes itself while they start or
// lose contact; they go on their own.
var ephemeralTaints = []corev1.Taint{
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
	{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: corev1.TaintEffectNoSchedule},
}

func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for _, x := range taints {
		if x.Key == t.Key && x.Effect == t.Effect {
			return true
		}
	}
	return false
}

func nodeReady(n *corev1.Node) (bool, string) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return true, ""
			}
			return false, "node Ready is " + string(c.Status) + ": " + c.Reason
		}
	}
	return false, "node has no Ready condition yet"
}

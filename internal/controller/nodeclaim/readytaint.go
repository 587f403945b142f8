package nodeclaim

import (
	corev1 "k8s.io/api/core/v1"
)

// notReadyNoSchedule is the taint kube-apiserver's TaintNodesByCondition
// admission puts on every new Node, and kube-controller-manager's node
// lifecycle controller lifts once the node reports Ready (and puts back
// while it reports Ready False).
var notReadyNoSchedule = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}

// liftNotReady drops notReadyNoSchedule from a node that reports Ready, and
// says whether it did. The controller writes that in the same patch that
// registers the node or labels it initialized, testing that the node is
// still Ready, so the taint goes exactly when kube-controller-manager's rule
// says it should: node lifecycle lifts it from a work queue of 8 workers,
// each a read and a write with a resourceVersion precondition, and in a
// burst of new nodes on a busy API server Ready nodes kept it for up to
// 22 s (p90 9 to 18 s over three 10,000-pod runs; up to 88 of them at
// once), their pods pending all that time. kube-controller-manager,
// finding the taint gone, writes nothing; were the node to report Ready
// False later, it adds the taint again. The NoExecute not-ready taint,
// which evicts, is left to it.
func liftNotReady(n *corev1.Node) bool {
	if ok, _ := nodeReady(n); !ok || !hasTaint(n.Spec.Taints, notReadyNoSchedule) {
		return false
	}
	// A new slice, not slices.DeleteFunc, which shifts the old array in
	// place: a shallow copy of the node kept as a patch's base would see
	// its taints change too.
	kept := make([]corev1.Taint, 0, len(n.Spec.Taints)-1)
	for _, t := range n.Spec.Taints {
		if t.Key == notReadyNoSchedule.Key && t.Effect == notReadyNoSchedule.Effect {
			continue
		}
		kept = append(kept, t)
	}
	n.Spec.Taints = kept
	return true
}

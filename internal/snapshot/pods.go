package snapshot

import (
	"time"

	"github.com/nodewright/nodewright/internal/disruption/protect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Provisionable reports whether a pod waits for capacity: kube-scheduler
// tried it and found no node, it is not preempting its way onto one (it has
// no status.nominatedNodeName), and it is not a DaemonSet's or a node's own
// pod. A pod the provisioner itself nominated to a node is judged by
// Nominated.ProvisionableAt instead.
func Provisionable(p *corev1.Pod) bool {
	return waiting(p) && p.Status.NominatedNodeName == "" && triedAndFailed(p)
}

// ProvisionableAt is Provisionable, and also true for a pod of the default
// scheduler that kube-scheduler has not got to within untriedAfter of its
// creation (0 turns this off). Under a burst of tens of thousands of pods
// the scheduler needs minutes to try each once; the solver places pods on
// existing nodes exactly as the scheduler would, so planning them early
// launches nothing the scheduler would not have needed.
func ProvisionableAt(p *corev1.Pod, now time.Time, untriedAfter time.Duration) bool {
	return provisionableAt(p, now, untriedAfter, false)
}

func provisionableAt(p *corev1.Pod, now time.Time, untriedAfter time.Duration, ownNomination bool) bool {
	if !waiting(p) || (p.Status.NominatedNodeName != "" && !ownNomination) {
		return false
	}
	if triedAndFailed(p) {
		return true
	}
	if untriedAfter <= 0 || !untried(p) {
		return false
	}
	if p.Spec.SchedulerName != "" && p.Spec.SchedulerName != corev1.DefaultSchedulerName {
		return false
	}
	return now.Sub(p.CreationTimestamp.Time) >= untriedAfter
}

func waiting(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || terminal(p) {
		return false
	}
	return !ownedBy(p, "DaemonSet") && !ownedBy(p, "Node")
}

func triedAndFailed(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

func untried(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return false
		}
	}
	return true
}

// Bound reports whether a pod occupies its node: bound and not finished.
func Bound(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && !terminal(p)
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func ownedBy(p *corev1.Pod, kind string) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == kind
}

// IsDaemonSetPod reports whether a DaemonSet controls the pod.
func IsDaemonSetPod(p *corev1.Pod) bool { return ownedBy(p, "DaemonSet") }

// MustMove reports whether a pod would have to move if its node went: it
// still runs, and it is neither a DaemonSet pod nor a mirror pod, which go
// with the node.
func MustMove(p *corev1.Pod) bool {
	return protect.Active(p) && !IsDaemonSetPod(p) && !protect.Mirror(p)
}

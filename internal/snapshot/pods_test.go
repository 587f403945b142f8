package snapshot

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestProvisionableAt(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: metav1.NewTime(created)}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	unschedulable := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		after time.Duration
		at    time.Duration
		want  bool
	}{
		{"unschedulable verdict", pod(unschedulable), 0, 0, true},
		{"untried, waiting for the scheduler", pod(nil), 0, time.Hour, false},
		{"untried, before the grace", pod(nil), 3 * time.Second, time.Second, false},
		{"untried, after the grace", pod(nil), 3 * time.Second, 3 * time.Second, true},
		{"untried, another scheduler", pod(func(p *corev1.Pod) { p.Spec.SchedulerName = "custom" }), 3 * time.Second, time.Hour, false},
		{"bound", pod(func(p *corev1.Pod) { p.Spec.NodeName = "n" }), 3 * time.Second, time.Hour, false},
		{"being scheduled (condition true)", pod(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		}), 3 * time.Second, time.Hour, false},
		{"preempting", pod(func(p *corev1.Pod) { unschedulable(p); p.Status.NominatedNodeName = "n" }), 0, 0, false},
		{"daemonset pod", pod(func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptrTo(true)}}
		}), 3 * time.Second, time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProvisionableAt(tc.pod, created.Add(tc.at), tc.after); got != tc.want {
				t.Fatalf("ProvisionableAt = %v, want %v", got, tc.want)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

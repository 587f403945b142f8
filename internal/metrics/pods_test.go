package metrics

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodTrackerTimesBindingAndStartOnce(t *testing.T) {
	created := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(created.Add(d)) }
	base := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1", CreationTimestamp: metav1.NewTime(created)}}
	pending := base
	pending.Status.Phase = corev1.PodPending
	boundPod := pending
	boundPod.Spec.NodeName = "n1"
	boundPod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(40 * time.Second)}}
	running := boundPod
	running.Status.Phase = corev1.PodRunning
	running.Status.Conditions = append(running.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at(70 * time.Second)})

	for _, c := range []struct {
		name   string
		events []corev1.Pod
		want   podTimes
	}{
		{"pending", []corev1.Pod{pending}, podTimes{}},
		{"bound after pending", []corev1.Pod{pending, boundPod}, podTimes{HasBound: true, Bound: 40 * time.Second}},
		{"started after pending", []corev1.Pod{pending, boundPod, running}, podTimes{HasStarted: true, Started: 70 * time.Second}},
		{"running when first seen", []corev1.Pod{running}, podTimes{}},
		{"seen again once started", []corev1.Pod{pending, boundPod, running, running}, podTimes{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := newPodTracker()
			var last podTimes
			for i := range c.events {
				last = tr.seen(&c.events[i])
			}
			if last != c.want {
				t.Errorf("last event completed %+v, want %+v", last, c.want)
			}
		})
	}
	tr := newPodTracker()
	tr.seen(&pending)
	tr.gone(pending.UID)
	if got := tr.seen(&running); got != (podTimes{}) {
		t.Errorf("a deleted pod's successor with the same UID was timed: %+v", got)
	}
}

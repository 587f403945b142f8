package protect

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

var now = time.Date(2024, 1, 2, 12, 0, 0, 0, time.UTC)

// pod is a running, ready pod in namespace ns; opts change it.
func pod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "web"},
			CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))},
		Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: now.Add(-time.Hour)},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func annotated(value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: value} }
}

func phase(ph corev1.PodPhase) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func terminating(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} }

func unready(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

func ownedBy(apiVersion, kind string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "owner", Controller: new(true)}}
	}
}

func tolerates(t corev1.Toleration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, t) }
}

func TestDoNotDisruptHoldsByValue(t *testing.T) {
	noStart := func(p *corev1.Pod) { p.Status.StartTime = nil }
	noTimes := func(p *corev1.Pod) { p.Status.StartTime, p.CreationTimestamp = nil, metav1.Time{} }
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		held  bool
		until time.Time
		err   string
	}{
		{"no annotation", pod("p"), false, time.Time{}, ""},
		{"true holds indefinitely", pod("p", annotated("true")), true, time.Time{}, ""},
		{"duration from start time", pod("p", annotated("90m")), true, now.Add(30 * time.Minute), ""},
		{"duration past", pod("p", annotated("30m")), false, now.Add(-30 * time.Minute), ""},
		{"ends exactly at until", pod("p", annotated("1h")), false, now, ""},
		{"creation time before start", pod("p", annotated("3h"), noStart), true, now.Add(time.Hour), ""},
		{"no time known holds", pod("p", annotated("1m"), noTimes), true, time.Time{}, ""},
		{"zero duration", pod("p", annotated("0s")), false, time.Time{}, "not positive"},
		{"negative duration", pod("p", annotated("-5m")), false, time.Time{}, "not positive"},
		{"false is not a value", pod("p", annotated("false")), false, time.Time{}, `pod ns/p: karpenter.sh/do-not-disrupt "false" is neither "true" nor a positive duration`},
		{"yes is not a value", pod("p", annotated("yes")), false, time.Time{}, "ignored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held, until, err := DoNotDisrupt(tc.pod, now)
			if held != tc.held || !until.Equal(tc.until) {
				t.Errorf("got held %v until %v; want %v until %v", held, until, tc.held, tc.until)
			}
			if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v; want one saying %q", err, tc.err)
			}
		})
	}
}

func TestEvictableFollowsKarpenter(t *testing.T) {
	mirror := func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "abc"} }
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"running pod", pod("p"), true},
		{"pending pod", pod("p", phase(corev1.PodPending)), true},
		{"succeeded pod", pod("p", phase(corev1.PodSucceeded)), false},
		{"failed pod", pod("p", phase(corev1.PodFailed)), false},
		{"terminating pod", pod("p", terminating), false},
		{"mirror pod by annotation", pod("p", mirror), false},
		{"static pod owned by its node", pod("p", ownedBy("v1", "Node")), false},
		{"DaemonSet pod is drained too", pod("p", ownedBy("apps/v1", "DaemonSet")), true},
		{"tolerates the disrupted taint", pod("p", tolerates(corev1.Toleration{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists})), false},
		{"tolerates every taint", pod("p", tolerates(corev1.Toleration{Operator: corev1.TolerationOpExists})), false},
		{"tolerates only NoExecute", pod("p", tolerates(corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})), true},
		{"do-not-disrupt holds it", pod("p", annotated("true")), false},
		{"expired do-not-disrupt does not", pod("p", annotated("10m")), true},
		{"invalid do-not-disrupt does not", pod("p", annotated("maybe")), true},
	} {
		if got := Evictable(tc.pod, now); got != tc.want {
			t.Errorf("%s: Evictable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

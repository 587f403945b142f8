package disruption

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestPodEventNodes: a watch event is a pod event on the nodes whose pod
// set it changes, as podSets counts them.
func TestPodEventNodes(t *testing.T) {
	pod := func(node string, opts ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p"}, Spec: corev1.PodSpec{NodeName: node}}
		for _, o := range opts {
			o(p)
		}
		return p
	}
	terminating := func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	running := func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }
	daemon := func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds", Controller: &yes}}
	}
	for _, tc := range []struct {
		name     string
		old, new any
		want     []string
	}{
		{"binds", pod(""), pod("n1"), []string{"n1"}},
		{"created bound", nil, pod("n1"), []string{"n1"}},
		{"starts running: no change", pod("n1"), pod("n1", running), nil},
		{"starts terminating", pod("n1"), pod("n1", terminating), []string{"n1"}},
		{"terminating pod goes: not again", pod("n1", terminating), nil, nil},
		{"fails", pod("n1", running), pod("n1", failed), []string{"n1"}},
		{"deleted at once", pod("n1"), nil, []string{"n1"}},
		{"deleted, seen late", toolscache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod("n1")}, nil, []string{"n1"}},
		{"pending pod changes", pod(""), pod("", running), nil},
		{"DaemonSet pod binds", pod("", daemon), pod("n1", daemon), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podEventNodes(asPod(tc.old), asPod(tc.new)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("nodes %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPromptStamps: pending events move onto their claims' events; a stamp
// is written at once only on a claim whose NodePool waits and only when the
// claim's stamp is a loop old or older; nodes of no known claim wait for
// the loop.
func TestPromptStamps(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	const loop = 10 * time.Second
	st := stampState{
		claimOf: map[string]string{"n1": "c1", "n2": "c2", "n3": "c3"},
		waits:   map[string]bool{"c1": true, "c2": true},
		stamped: map[string]time.Time{"c1": t0, "c2": t0.Add(95 * time.Second)},
	}
	at := t0.Add(100*time.Second + 300*time.Millisecond)
	for _, tc := range []struct {
		name       string
		pending    map[string]time.Time
		wantDue    map[string]time.Time
		wantEvents map[string]time.Time
	}{
		{"stamp long old: written now, in whole seconds", map[string]time.Time{"n1": at},
			map[string]time.Time{"c1": at.Truncate(time.Second)}, map[string]time.Time{"c1": at}},
		{"stamp recent: left to the loop", map[string]time.Time{"n2": at},
			map[string]time.Time{}, map[string]time.Time{"c2": at}},
		{"NodePool does not wait: only remembered", map[string]time.Time{"n3": at},
			map[string]time.Time{}, map[string]time.Time{"c3": at}},
		{"node of no known claim: dropped", map[string]time.Time{"n9": at},
			map[string]time.Time{}, map[string]time.Time{}},
		{"an older event does not move the remembered one back", map[string]time.Time{"n1": t0.Add(-time.Minute)},
			map[string]time.Time{}, map[string]time.Time{"c1": t0.Add(time.Minute)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := map[string]time.Time{}
			if tc.name == "an older event does not move the remembered one back" {
				events["c1"] = t0.Add(time.Minute)
			}
			due := promptStamps(tc.pending, st, events, loop)
			if !reflect.DeepEqual(due, tc.wantDue) {
				t.Errorf("due %v, want %v", due, tc.wantDue)
			}
			if !reflect.DeepEqual(events, tc.wantEvents) {
				t.Errorf("events %v, want %v", events, tc.wantEvents)
			}
		})
	}
}

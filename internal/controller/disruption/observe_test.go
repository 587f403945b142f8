package disruption

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// TestPodSets: the pods whose coming and going is a pod event, as Karpenter
// counts them: binding, turning terminal and starting to terminate change a
// node's set; a terminating pod finally going does not, nor do DaemonSet
// and mirror pods.
func TestPodSets(t *testing.T) {
	pod := func(uid, node string, opts ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: node}}
		p.Status.Phase = corev1.PodRunning
		for _, o := range opts {
			o(p)
		}
		return p
	}
	terminating := func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }
	succeeded := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	daemon := func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds", Controller: &yes}}
	}
	mirror := func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }
	base := []*corev1.Pod{pod("b", "n1"), pod("a", "n1"), pod("c", "n2")}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want map[string]string
	}{
		{"in uid order", base, map[string]string{"n1": "a,b", "n2": "c"}},
		{"a pod binds", append(append([]*corev1.Pod(nil), base...), pod("d", "n1")), map[string]string{"n1": "a,b,d", "n2": "c"}},
		{"a pod starts terminating", []*corev1.Pod{pod("b", "n1"), pod("a", "n1", terminating), pod("c", "n2")}, map[string]string{"n1": "b", "n2": "c"}},
		{"a terminating pod goes", []*corev1.Pod{pod("b", "n1"), pod("c", "n2")}, map[string]string{"n1": "b", "n2": "c"}},
		{"a pod ends", []*corev1.Pod{pod("b", "n1"), pod("a", "n1", succeeded), pod("c", "n2")}, map[string]string{"n1": "b", "n2": "c"}},
		{"DaemonSet, mirror and unbound pods do not count", append(append([]*corev1.Pod(nil), base...),
			pod("ds", "n1", daemon), pod("m", "n2", mirror), pod("p", "")), map[string]string{"n1": "a,b", "n2": "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podSets(tc.pods)
			if len(got) != len(tc.want) {
				t.Fatalf("sets %v, want %v", got, tc.want)
			}
			for n, s := range tc.want {
				if got[n] != s {
					t.Errorf("node %s: %q, want %q", n, got[n], s)
				}
			}
		})
	}
	// Terminating then gone is one event: the set is the same before and
	// after the pod is removed.
	before := podSets([]*corev1.Pod{pod("b", "n1"), pod("a", "n1", terminating)})
	after := podSets([]*corev1.Pod{pod("b", "n1")})
	if before["n1"] != after["n1"] {
		t.Errorf("a terminating pod going changed the set: %q then %q", before["n1"], after["n1"])
	}
}

// TestPodEventStamps: a pod event is written to the claim only where
// consolidateAfter is a positive duration, only when it is later than what
// the claim holds (to the second the API keeps), and, for a NodePool
// changed to a positive consolidateAfter, with the time it happened.
func TestPodEventStamps(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	pool := func(name, after string) *karpv1.NodePool {
		np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration(after)
		return np
	}
	pools := map[string]*karpv1.NodePool{"waits": pool("waits", "30s"), "at-once": pool("at-once", "0s"), "never": pool("never", "Never")}
	claim := func(name, pool string, stored time.Time) *karpv1.NodeClaim {
		return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: pool}},
			Status: karpv1.NodeClaimStatus{LastPodEventTime: metav1.NewTime(stored)}}
	}
	deleting := claim("deleting", "waits", time.Time{})
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	claims := []*karpv1.NodeClaim{
		claim("new-event", "waits", now.Add(-time.Minute)),
		claim("written", "waits", now.Truncate(time.Second)),
		claim("no-event", "waits", time.Time{}),
		claim("at-once", "at-once", time.Time{}),
		claim("never", "never", time.Time{}),
		claim("no-pool", "gone", time.Time{}),
		deleting,
	}
	events := map[string]time.Time{}
	for _, nc := range claims {
		if nc.Name != "no-event" {
			events[nc.Name] = now.Add(400 * time.Millisecond)
		}
	}
	got := podEventStamps(claims, pools, events)
	want := map[string]time.Time{"new-event": now}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stamps %v, want %v", got, want)
	}
	// The NodePool of "at-once" now waits: its event, remembered, is
	// written with the time it happened.
	pools["at-once"] = pool("at-once", "1m")
	if got := podEventStamps(claims, pools, events); !got["at-once"].Equal(now) {
		t.Errorf("after consolidateAfter changed to 1m: stamps %v, want at-once at %v", got, now)
	}
}

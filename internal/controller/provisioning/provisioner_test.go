package provisioning

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/internal/snapshot"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	pod := func(uid string, age time.Duration, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	unschedulable := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	}
	pods := []*corev1.Pod{
		pod("unschedulable", time.Second, unschedulable),
		pod("untried-young", time.Second, nil),
		pod("untried-old", 10*time.Second, nil),
		pod("bound", time.Minute, func(p *corev1.Pod) { p.Spec.NodeName = "n"; p.Status.Phase = corev1.PodRunning }),
		pod("preempting", time.Minute, func(p *corev1.Pod) { unschedulable(p); p.Status.NominatedNodeName = "other" }),
	}
	// The preempting pod's nominated node exists and no NodeClaim nominated
	// it there: kube-scheduler's own nomination.
	ours := snapshot.NominatedNodes(nil, snapshot.IndexNodes([]*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "other"}}}))
	planned, states := classify(pods, ours, now, 3*time.Second)
	for _, uid := range []types.UID{"unschedulable", "untried-old"} {
		if _, ok := planned[uid]; !ok {
			t.Errorf("pod %s not among those the pass may plan: %v", uid, planned)
		}
	}
	if len(planned) != 2 {
		t.Errorf("the pass may plan %d pods, want 2: %v", len(planned), planned)
	}
	want := map[[2]string]int{
		{"Pending", "unschedulable"}:         1,
		{"Pending", "waiting-for-scheduler"}: 3, // untried (young and old) and preempting
		{"Running", "bound"}:                 1,
	}
	for k, n := range want {
		if states[k] != n {
			t.Errorf("states[%v] = %d, want %d (all: %v)", k, states[k], n, states)
		}
	}
}

// A pod that just became plannable is new work; an update of a pod the
// last pass planned, or a verdict on a pod whose untried grace brought it
// already, is a poke.
func TestOnPodTriggersOnlyForNewWork(t *testing.T) {
	for _, tc := range []struct {
		name        string
		planned     bool
		age         time.Duration
		untried     time.Duration
		untriedDue  bool
		wantTrigger bool
		wantPoke    bool
	}{
		{name: "pod the last pass planned", planned: true, wantPoke: true},
		{name: "new pod, not planned", wantTrigger: true},
		{name: "verdict before the untried grace ends", age: time.Second, untried: 3 * time.Second, wantTrigger: true},
		{name: "verdict after the untried grace ended", age: 5 * time.Second, untried: 3 * time.Second, wantPoke: true},
		{name: "old pod, untried planning off", age: time.Hour, wantTrigger: true},
		{name: "untried grace ends, pod not planned", untriedDue: true, wantTrigger: true},
		{name: "untried grace ends, pod planned", planned: true, untriedDue: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Provisioner{Batcher: NewBatcher(time.Second, time.Second), Opts: Options{UntriedAfter: tc.untried}}
			uid := types.UID("u1")
			if tc.planned {
				p.setPlanned(map[types.UID]struct{}{uid: {}})
			}
			if tc.untriedDue {
				p.OnUntriedDue(uid)
			} else {
				p.OnPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, CreationTimestamp: metav1.NewTime(time.Now().Add(-tc.age))}})
			}
			if got := len(p.Batcher.trigger) == 1; got != tc.wantTrigger {
				t.Errorf("triggered = %v, want %v", got, tc.wantTrigger)
			}
			if got := len(p.Batcher.poke) == 1; got != tc.wantPoke {
				t.Errorf("poked = %v, want %v", got, tc.wantPoke)
			}
		})
	}
}

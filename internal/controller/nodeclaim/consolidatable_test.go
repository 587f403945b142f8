package nodeclaim

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// TestConsolidatable: no condition when consolidation is off or the claim
// has not initialized; none, with the time left, until consolidateAfter has
// passed since the later of initialization and the last pod event; True
// from then on.
func TestConsolidatable(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	claim := func(initialized *time.Time, lastPodEvent time.Time) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
		if initialized != nil {
			nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue,
				Reason: "Initialized", LastTransitionTime: metav1.NewTime(*initialized)}}
		}
		nc.Status.LastPodEventTime = metav1.NewTime(lastPodEvent)
		return nc
	}
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	after := func(d time.Duration) *time.Duration { return &d }
	for _, tc := range []struct {
		name    string
		nc      *karpv1.NodeClaim
		after   *time.Duration
		now     time.Time
		want    bool
		recheck time.Duration
	}{
		{"consolidateAfter Never", claim(at(0), time.Time{}), nil, t0.Add(time.Hour), false, 0},
		{"not initialized", claim(nil, time.Time{}), after(0), t0.Add(time.Hour), false, 0},
		{"0s: at once", claim(at(0), time.Time{}), after(0), t0, true, 0},
		{"counts from initialization", claim(at(0), time.Time{}), after(10 * time.Minute), t0.Add(4 * time.Minute), false, 6 * time.Minute},
		{"initialized long enough ago", claim(at(0), time.Time{}), after(10 * time.Minute), t0.Add(10 * time.Minute), true, 0},
		{"a pod event starts it again", claim(at(0), t0.Add(20*time.Minute)), after(10 * time.Minute), t0.Add(25 * time.Minute), false, 5 * time.Minute},
		{"quiet since the pod event", claim(at(0), t0.Add(20*time.Minute)), after(10 * time.Minute), t0.Add(31 * time.Minute), true, 0},
		{"a pod event before initialization counts from initialization", claim(at(10*time.Minute), t0), after(10 * time.Minute), t0.Add(15 * time.Minute), false, 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cond, recheck := consolidatable(tc.nc, tc.after, tc.now)
			if got := cond != nil; got != tc.want {
				t.Fatalf("consolidatable = %+v, want %v", cond, tc.want)
			}
			if cond != nil && (cond.Status != metav1.ConditionTrue || cond.Reason != karpv1.ConditionTypeConsolidatable) {
				t.Errorf("condition %+v, want True with reason Consolidatable", cond)
			}
			if recheck != tc.recheck {
				t.Errorf("recheck in %s, want %s", recheck, tc.recheck)
			}
		})
	}
}

// TestSetOrRemove: a condition already as wanted is no change, so the
// controller writes nothing.
func TestSetOrRemove(t *testing.T) {
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	cond := &metav1.Condition{Type: karpv1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue, Reason: karpv1.ConditionTypeConsolidatable}
	if !setOrRemove(nc, cond.Type, cond) {
		t.Fatal("setting a new condition was no change")
	}
	if setOrRemove(nc, cond.Type, cond) {
		t.Error("setting it again changed the claim")
	}
	if !setOrRemove(nc, cond.Type, nil) || len(nc.Status.Conditions) != 0 {
		t.Errorf("removing it: %+v", nc.Status.Conditions)
	}
	if setOrRemove(nc, cond.Type, nil) {
		t.Error("removing an absent condition changed the claim")
	}
}

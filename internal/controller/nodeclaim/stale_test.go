package nodeclaim

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// copyAt is the informer's copy of claim name at version, with conds.
func copyAt(name, version string, conds ...metav1.Condition) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: version, UID: types.UID("uid-" + name)},
		Status: karpv1.NodeClaimStatus{Conditions: conds}}
}

func TestWritesStale(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		wrote   []string // versions written over, in order, a second apart
		read    string
		after   time.Duration // since the last write
		stale   bool
		remains bool // the record survives the read
	}{
		{"nothing written", nil, "5", 0, false, false},
		{"the copy before our write", []string{"5"}, "5", time.Second, true, true},
		{"a copy before an earlier of two writes", []string{"5", "6"}, "5", time.Second, true, true},
		{"the copy our last write made", []string{"5", "6"}, "7", time.Second, false, false},
		{"a copy someone else wrote later", []string{"5"}, "9", time.Second, false, false},
		{"too long ago: trust the cache", []string{"5"}, "5", staleAfterWrite + time.Second, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w writes
			now := t0
			for _, v := range tc.wrote {
				now = now.Add(time.Second)
				w.wrote("a", v, now)
			}
			w.wrote("other", tc.read, now) // another claim's record does not count
			if got := w.stale(copyAt("a", tc.read), now.Add(tc.after)); got != tc.stale {
				t.Errorf("stale = %v, want %v", got, tc.stale)
			}
			if _, ok := w.m["a"]; ok != tc.remains {
				t.Errorf("record kept = %v, want %v", ok, tc.remains)
			}
		})
	}
	var w writes
	w.wrote("a", "5", t0)
	w.forget("a")
	if w.stale(copyAt("a", "5"), t0) {
		t.Error("a forgotten claim's copy is still stale")
	}
}

// TestWritesStaleByConditions: a JSON patch lands on whatever version is
// stored, so a copy newer than the version our write replaced (another
// writer's, stored before ours landed) can still lack it; it shows our
// conditions otherwise and is waited out. A copy showing them as written,
// or a claim made again under the same name, is not.
func TestWritesStaleByConditions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	registered := metav1.Condition{Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionTrue, Reason: "Registered"}
	unknown := metav1.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionUnknown, Reason: "AwaitingNode"}
	initialized := metav1.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"}
	consolidatable := metav1.Condition{Type: karpv1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue, Reason: "Consolidatable"}
	preview := metav1.Condition{Type: "nodewright.dev/DisruptionPreview", Status: metav1.ConditionFalse, Reason: "Blocked"}
	for _, tc := range []struct {
		name          string
		before, after []metav1.Condition // our write
		read          *karpv1.NodeClaim
		stale         bool
	}{
		{"another writer's version, before ours landed", []metav1.Condition{registered, unknown}, []metav1.Condition{registered, initialized},
			copyAt("a", "7", registered, unknown), true},
		{"our write seen", []metav1.Condition{registered, unknown}, []metav1.Condition{registered, initialized},
			copyAt("a", "8", registered, initialized), false},
		{"our write seen with another writer's condition", []metav1.Condition{registered, unknown}, []metav1.Condition{registered, initialized},
			copyAt("a", "9", registered, initialized, preview), false},
		{"a removal not seen yet", []metav1.Condition{initialized, consolidatable}, []metav1.Condition{initialized},
			copyAt("a", "7", initialized, consolidatable), true},
		{"a removal seen", []metav1.Condition{initialized, consolidatable}, []metav1.Condition{initialized},
			copyAt("a", "8", initialized), false},
		{"a claim made again under the name", []metav1.Condition{registered, unknown}, []metav1.Condition{registered, initialized},
			func() *karpv1.NodeClaim { nc := copyAt("a", "3"); nc.UID = "another"; return nc }(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w writes
			w.wroteStatus("a", "uid-a", "5", changedConditions(tc.before, tc.after), t0)
			if got := w.stale(tc.read, t0.Add(time.Second)); got != tc.stale {
				t.Errorf("stale = %v, want %v", got, tc.stale)
			}
		})
	}
	// Past staleAfterWrite the cache is trusted whatever it shows.
	var w writes
	w.wroteStatus("a", "uid-a", "5", changedConditions([]metav1.Condition{unknown}, []metav1.Condition{initialized}), t0)
	if w.stale(copyAt("a", "7", unknown), t0.Add(staleAfterWrite+time.Second)) {
		t.Error("a copy is still stale after staleAfterWrite")
	}
}

package nodepool

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func ok(claim string) Outcome { return Outcome{NodeClaim: claim, Registered: true} }

func failed(claim string) Outcome {
	return Outcome{NodeClaim: claim, Reason: ReasonRegistrationFailed, Message: "NodeClaim " + claim + " did not register"}
}

func healthCond(status metav1.ConditionStatus, gen int64) *metav1.Condition {
	return &metav1.Condition{Type: ConditionNodeRegistrationHealthy, Status: status, Reason: "Was", Message: "as before", ObservedGeneration: gen}
}

// TestRegistrationHealthy: the condition goes False once half the window
// failed, naming the failure that tipped it, True on a success with fewer
// failures than that, and otherwise keeps what it said, or says Unknown
// after a change.
func TestRegistrationHealthy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		prev     *metav1.Condition
		current  bool
		outcomes []Outcome
		want     metav1.ConditionStatus // "" keeps prev
		reason   string
		msg      string
	}{
		{"new pool", nil, false, nil, metav1.ConditionUnknown, ReasonAwaitingNodeRegistration, "no node of this NodePool has registered yet"},
		{"spec changed", healthCond(metav1.ConditionFalse, 1), false, nil, metav1.ConditionUnknown, ReasonAwaitingNodeRegistration, "changed"},
		{"nothing new", healthCond(metav1.ConditionTrue, 2), true, nil, "", "", ""},
		{"one registration", healthCond(metav1.ConditionUnknown, 2), true, []Outcome{ok("a")}, metav1.ConditionTrue, ConditionNodeRegistrationHealthy, ""},
		{"one failure keeps Unknown", healthCond(metav1.ConditionUnknown, 2), true, []Outcome{failed("a")}, "", "", ""},
		{"one failure keeps True", healthCond(metav1.ConditionTrue, 2), true, []Outcome{ok("a"), failed("b")}, metav1.ConditionTrue, ConditionNodeRegistrationHealthy, ""},
		{"two failures of four", healthCond(metav1.ConditionTrue, 2), true, []Outcome{ok("a"), ok("b"), failed("c"), failed("d")},
			metav1.ConditionFalse, ReasonRegistrationFailed, "NodeClaim d did not register"},
		{"two failures after a change", healthCond(metav1.ConditionTrue, 1), false, []Outcome{failed("c"), failed("d")},
			metav1.ConditionFalse, ReasonRegistrationFailed, "NodeClaim d did not register"},
		{"a launch failure names its reason", nil, false, []Outcome{failed("c"), {NodeClaim: "d", Reason: "NodeClassNotReady", Message: "no class"}},
			metav1.ConditionFalse, "NodeClassNotReady", "no class"},
		{"already False keeps its message", healthCond(metav1.ConditionFalse, 2), true, []Outcome{failed("c"), failed("d"), failed("e")}, "", "", ""},
		{"a success with two failures left stays False", healthCond(metav1.ConditionFalse, 2), true, []Outcome{failed("c"), failed("d"), ok("e")}, "", "", ""},
		{"three successes after two failures", healthCond(metav1.ConditionFalse, 2), true, []Outcome{failed("d"), ok("e"), ok("f"), ok("g")},
			metav1.ConditionTrue, ConditionNodeRegistrationHealthy, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := registrationHealthy(tc.prev, tc.current, tc.outcomes)
			if tc.want == "" {
				if got != nil {
					t.Fatalf("got %+v, want prev kept", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("prev kept, want %s", tc.want)
			}
			if got.Status != tc.want || got.Reason != tc.reason || !strings.Contains(got.Message, tc.msg) {
				t.Errorf("got %s %s %q, want %s %s with %q", got.Status, got.Reason, got.Message, tc.want, tc.reason, tc.msg)
			}
		})
	}
}

// TestRegistrationsRecord: outcomes are kept per NodePool at its
// generations, a claim counts once, only the window is kept, a change
// starts over, and a restarted process starts from the condition.
func TestRegistrationsRecord(t *testing.T) {
	pool := func(gen, classGen int64, cond *metav1.Condition) *karpv1.NodePool {
		np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "uid-p", Generation: gen}}
		np.Status.NodeClassObservedGeneration = classGen
		if cond != nil {
			np.Status.Conditions = []metav1.Condition{*cond}
		}
		return np
	}
	names := func(os []Outcome) []string {
		var out []string
		for _, o := range os {
			s := o.NodeClaim
			if !o.Registered {
				s += "!"
			}
			out = append(out, s)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		record []Outcome
		at     *karpv1.NodePool // the pool the records were made with
		read   *karpv1.NodePool
		class  int64
		want   []string
	}{
		{"kept in order", []Outcome{ok("a"), failed("b")}, pool(1, 1, nil), pool(1, 1, nil), 1, []string{"a", "b!"}},
		{"a claim counts once", []Outcome{failed("a"), ok("b"), ok("a")}, pool(1, 1, nil), pool(1, 1, nil), 1, []string{"b", "a"}},
		{"the window", []Outcome{ok("a"), ok("b"), failed("c"), failed("d"), ok("e")}, pool(1, 1, nil), pool(1, 1, nil), 1, []string{"b", "c!", "d!", "e"}},
		{"spec changed", []Outcome{failed("a"), failed("b")}, pool(1, 1, nil), pool(2, 1, nil), 1, nil},
		{"class changed", []Outcome{failed("a"), failed("b")}, pool(1, 1, nil), pool(1, 1, nil), 2, nil},
		{"class not yet observed", []Outcome{failed("a")}, pool(1, 0, nil), pool(1, 2, nil), 2, []string{"a!"}},
		{"read from an older copy", []Outcome{failed("a")}, pool(2, 1, nil), pool(1, 1, nil), 1, []string{"a!"}},
		{"restarted while True", nil, nil, pool(3, 1, healthCond(metav1.ConditionTrue, 3)), 1, []string{""}},
		{"restarted while False", nil, nil, pool(3, 1, healthCond(metav1.ConditionFalse, 3)), 1, []string{"!", "!"}},
		{"restarted, condition of an older spec", nil, nil, pool(3, 1, healthCond(metav1.ConditionFalse, 2)), 1, nil},
		{"restarted, then a failure while False", []Outcome{failed("x")}, pool(3, 1, healthCond(metav1.ConditionFalse, 3)),
			pool(3, 1, healthCond(metav1.ConditionFalse, 3)), 1, []string{"!", "!", "x!"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Registrations{}
			for _, o := range tc.record {
				r.Record(tc.at, o)
			}
			got := names(r.Outcomes(tc.read, tc.class))
			if len(got) != len(tc.want) {
				t.Fatalf("outcomes %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("outcomes %q, want %q", got, tc.want)
				}
			}
		})
	}
}

// TestDecideRegistrationHealth: Decide writes NodeRegistrationHealthy at
// the pool's generation, records the NodeClass generation it observed, and
// starts over when that changes.
func TestDecideRegistrationHealth(t *testing.T) {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 4}}
	np.Status.NodeClassObservedGeneration = 7
	np.Status.Conditions = []metav1.Condition{*healthCond(metav1.ConditionFalse, 4)}
	for _, tc := range []struct {
		name  string
		obs   Observed
		want  metav1.ConditionStatus
		class int64
	}{
		{"unchanged", Observed{NodeClassGeneration: 7}, metav1.ConditionFalse, 7},
		{"class unreadable", Observed{}, metav1.ConditionFalse, 7},
		{"class changed", Observed{NodeClassGeneration: 8}, metav1.ConditionUnknown, 8},
		{"registered", Observed{NodeClassGeneration: 7, Registrations: []Outcome{ok("a")}}, metav1.ConditionTrue, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Decide(np, tc.obs)
			c := meta.FindStatusCondition(st.Conditions, ConditionNodeRegistrationHealthy)
			if c.Status != tc.want || c.ObservedGeneration != 4 {
				t.Errorf("NodeRegistrationHealthy %+v, want %s at generation 4", c, tc.want)
			}
			if st.NodeClassObservedGeneration != tc.class {
				t.Errorf("nodeClassObservedGeneration %d, want %d", st.NodeClassObservedGeneration, tc.class)
			}
		})
	}
}

package budget

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

const (
	empty         = karpv1.DisruptionReasonEmpty
	underutilized = karpv1.DisruptionReasonUnderutilized
	drifted       = karpv1.DisruptionReasonDrifted
)

func pool(annotations map[string]string, budgets ...karpv1.Budget) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: annotations}}
	np.Spec.Disruption.Budgets = budgets
	return np
}

func only(nodes string, reasons ...karpv1.DisruptionReason) karpv1.Budget {
	return karpv1.Budget{Nodes: nodes, Reasons: reasons}
}

// allowed is the expected Allowed for Empty, Underutilized and Drifted.
type allowed [3]int

func TestEvaluateTakesSmallestActiveBudgetLessDisrupting(t *testing.T) {
	weekdays := scheduled("0", "0 9 * * mon-fri", 8*time.Hour)
	tuesday, saturday := at(2, 10, 0, 0), at(6, 10, 0, 0)
	independent := map[string]string{IndependentReasonBudgetsAnnotation: "true"}
	for _, tc := range []struct {
		name       string
		np         *karpv1.NodePool
		total      int
		disrupting map[karpv1.DisruptionReason]int
		now        time.Time
		want       allowed
		budget     int // binding budget for Drifted
		says       string
	}{
		{"default is 10% rounded up", pool(nil), 5, nil, tuesday, allowed{1, 1, 1}, -1, "the default budget (nodes: 10%) allows 1 of 5 nodes; 0 already disrupting"},
		{"default of no nodes", pool(nil), 0, nil, tuesday, allowed{0, 0, 0}, -1, "allows 0 of 0"},
		{"disrupting nodes are taken off", pool(nil, only("3")), 10, map[karpv1.DisruptionReason]int{drifted: 1}, tuesday, allowed{2, 2, 2}, 0, "budget 0 (nodes: 3) allows 3 of 10 nodes; 1 already disrupting"},
		{"floored at zero", pool(nil, only("1")), 10, map[karpv1.DisruptionReason]int{empty: 3}, tuesday, allowed{0, 0, 0}, 0, ""},
		{"smallest of several", pool(nil, only("5"), only("20%"), only("3")), 10, nil, tuesday, allowed{2, 2, 2}, 1, "budget 1 (nodes: 20%)"},
		{"reasons filter budgets", pool(nil, only("0", drifted), only("4")), 10, nil, tuesday, allowed{4, 4, 0}, 0, "budget 0 (nodes: 0, reasons: Drifted)"},
		{"no budget for the reason is unbounded", pool(nil, only("1", empty)), 10, map[karpv1.DisruptionReason]int{drifted: 2}, tuesday, allowed{0, 8, 8}, -1, "no active budget applies to Drifted; 2 of 10 nodes already disrupting"},
		{"weekday window on a Tuesday", pool(nil, only("5"), weekdays), 10, nil, tuesday, allowed{0, 0, 0}, 1,
			"budget 1 (nodes: 0, schedule '0 9 * * mon-fri', duration 8h) is active until 17:00 UTC and allows 0 of 10 nodes"},
		{"weekday window on a Saturday", pool(nil, only("5"), weekdays), 10, nil, saturday, allowed{5, 5, 5}, 0, "budget 0 (nodes: 5)"},
		{"Karpenter counts every disruption against every reason", pool(nil, only("2", drifted), only("1", underutilized)), 10,
			map[karpv1.DisruptionReason]int{drifted: 2}, tuesday, allowed{8, 0, 0}, 0, "2 already disrupting"},
		{"independent reasons count their own", pool(independent, only("2", drifted), only("1", underutilized)), 10,
			map[karpv1.DisruptionReason]int{drifted: 2}, tuesday, allowed{8, 1, 0}, 0, "2 already disrupting"},
		{"independent: a budget of two reasons counts both", pool(independent, only("3", drifted, underutilized)), 10,
			map[karpv1.DisruptionReason]int{drifted: 1, underutilized: 1, empty: 4}, tuesday, allowed{4, 1, 1}, 0, "2 already disrupting"},
		{"independent: ungoverned disruptions count against all", pool(independent, only("2", drifted), only("2", empty)), 10,
			map[karpv1.DisruptionReason]int{"Expired": 1, empty: 1}, tuesday, allowed{0, 8, 1}, 0, "1 already disrupting"},
		{"independent: a budget without reasons counts all", pool(independent, only("3")), 10,
			map[karpv1.DisruptionReason]int{drifted: 2}, tuesday, allowed{1, 1, 1}, 0, ""},
		{"independent off by value", pool(map[string]string{IndependentReasonBudgetsAnnotation: "false"}, only("2", drifted), only("1", underutilized)), 10,
			map[karpv1.DisruptionReason]int{drifted: 2}, tuesday, allowed{8, 0, 0}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Evaluate(Input{NodePool: tc.np, Total: tc.total, Disrupting: tc.disrupting}, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			got := allowed{res.Allowed(empty), res.Allowed(underutilized), res.Allowed(drifted)}
			if got != tc.want {
				t.Errorf("allowed (Empty, Underutilized, Drifted) = %v, want %v", got, tc.want)
			}
			d := res.Allowances[drifted]
			if d.Budget != tc.budget || !strings.Contains(d.Message, tc.says) || d.Rate != -1 {
				t.Errorf("Drifted bound by budget %d (rate %d): %q; want budget %d saying %q", d.Budget, d.Rate, d.Message, tc.budget, tc.says)
			}
		})
	}
}

func TestEvaluateCapsByDisruptionRate(t *testing.T) {
	now := at(2, 12, 0, 0)
	recent := []time.Time{now.Add(-50 * time.Minute), now.Add(-20 * time.Minute), now.Add(-3 * time.Hour)}
	for _, tc := range []struct {
		name    string
		rate    string
		budget  string
		want    int
		rateArg int
		says    string
	}{
		{"rate binds", "3/1h", "5", 1, 1, "disruption rate 3/1h leaves 1: 2 started in the last 1h; another may start at 12:10 UTC"},
		{"rate full", "2/1h", "5", 0, 0, "another may start at 12:10 UTC"},
		{"budget binds", "10/1h", "5", 5, 8, "budget 0 (nodes: 5)"},
		{"zero rate", "0/1h", "5", 0, 0, "disruption rate 0/1h allows none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := pool(map[string]string{DisruptionRateAnnotation: tc.rate}, only(tc.budget))
			res, err := Evaluate(Input{NodePool: np, Total: 20, Started: recent}, now)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range Reasons() {
				a := res.Allowances[r]
				if a.Allowed != tc.want || a.Rate != tc.rateArg || !strings.Contains(a.Message, tc.says) {
					t.Errorf("%s: allowed %d, rate %d, %q; want %d, %d, saying %q", r, a.Allowed, a.Rate, a.Message, tc.want, tc.rateArg, tc.says)
				}
			}
		})
	}
}

func TestEvaluateFailsClosedOnBadInput(t *testing.T) {
	now := at(2, 12, 0, 0)
	bad := func(s string) karpv1.Budget {
		return karpv1.Budget{Nodes: "1", Reasons: []karpv1.DisruptionReason{drifted}, Schedule: &s, Duration: &metav1.Duration{Duration: time.Hour}}
	}
	for _, tc := range []struct {
		name  string
		np    *karpv1.NodePool
		want  allowed
		field string
		says  string
	}{
		{"bad schedule blocks its reasons only", pool(nil, only("5"), bad("61 * * * *")), allowed{3, 3, 0},
			"spec.disruption.budgets[1].schedule", `NodePool default: spec.disruption.budgets[1].schedule "61 * * * *": not a cron schedule`},
		{"bad nodes", pool(nil, only("5"), only("ten")), allowed{0, 0, 0},
			"spec.disruption.budgets[1].nodes", `"ten": want a count such as "5"`},
		{"bad nodes of an inactive budget", pool(nil, only("5"), scheduled("x", "0 0 1 1 *", time.Hour)), allowed{0, 0, 0},
			"spec.disruption.budgets[1].nodes", "want a count"},
		{"schedule without duration", pool(nil, karpv1.Budget{Nodes: "5", Schedule: new("@daily")}), allowed{0, 0, 0},
			"spec.disruption.budgets[0].duration", "a schedule needs a duration"},
		{"bad rate", pool(map[string]string{DisruptionRateAnnotation: "three per hour"}, only("5")), allowed{0, 0, 0},
			"metadata.annotations[nodewright.dev/disruption-rate]", `want "N/WINDOW" such as "3/1h"`},
		{"bad independent value reads as false", pool(map[string]string{IndependentReasonBudgetsAnnotation: "yes"}, only("2", drifted)), allowed{8, 8, 0},
			"metadata.annotations[nodewright.dev/independent-reason-budgets]", `want "true" or "false"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Evaluate(Input{NodePool: tc.np, Total: 10, Disrupting: map[karpv1.DisruptionReason]int{empty: 2}}, now)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v; want a *FieldError on %s saying %q", err, tc.field, tc.says)
			}
			if got := (allowed{res.Allowed(empty), res.Allowed(underutilized), res.Allowed(drifted)}); got != tc.want {
				t.Errorf("allowed (Empty, Underutilized, Drifted) = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEvaluateReportsNextChange(t *testing.T) {
	weekdays := scheduled("0", "0 9 * * mon-fri", 8*time.Hour)
	nightly := scheduled("0", "@daily", 2*time.Hour)
	for _, tc := range []struct {
		name    string
		np      *karpv1.NodePool
		started []time.Time
		now     time.Time
		want    time.Time
	}{
		{"no schedule, no rate", pool(nil, only("1")), nil, at(2, 10, 0, 0), time.Time{}},
		{"window closes", pool(nil, weekdays, nightly), nil, at(2, 10, 0, 0), at(2, 17, 0, 0)},
		{"window opens", pool(nil, weekdays, nightly), nil, at(6, 10, 0, 0), at(7, 0, 0, 0)},
		{"rate slot frees", pool(map[string]string{DisruptionRateAnnotation: "1/1h"}, weekdays), []time.Time{at(2, 9, 30, 0)}, at(2, 10, 0, 0), at(2, 10, 30, 0)},
		{"invalid budget has no change", pool(nil, scheduled("0", "bad", time.Hour)), nil, at(2, 10, 0, 0), time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := Evaluate(Input{NodePool: tc.np, Total: 10, Started: tc.started}, tc.now)
			if !res.NextChange.Equal(tc.want) {
				t.Errorf("NextChange = %v, want %v", res.NextChange, tc.want)
			}
		})
	}
}

func TestUnknownReasonIsAllowedNothing(t *testing.T) {
	res, err := Evaluate(Input{NodePool: pool(nil), Total: 10}, at(2, 10, 0, 0))
	if err != nil || res.Allowed("Expired") != 0 || len(res.Allowances) != 3 {
		t.Errorf("got %v, %v; want 0 for an unknown reason and three allowances", res.Allowances, err)
	}
}

func TestBudgetStateStringDescribesBudget(t *testing.T) {
	s := BudgetState{Index: 2, Budget: karpv1.Budget{Nodes: "0", Reasons: []karpv1.DisruptionReason{drifted, empty}}}
	s.Budget.Schedule = new("0 9 * * mon-fri")
	s.Budget.Duration = &metav1.Duration{Duration: 90 * time.Minute}
	want := "budget 2 (nodes: 0, reasons: Drifted, Empty, schedule '0 9 * * mon-fri', duration 1h30m)"
	if got := s.String(); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	w, _ := WindowAt(scheduled("0", "@daily", 2*time.Hour), at(2, 23, 0, 0))
	if got := clock(w.Next, at(2, 23, 0, 0)); got != "Wed 2024-01-03 00:00 UTC" {
		t.Errorf("clock of another day = %q", got)
	}
}

package disruption

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/disruption/planner"
)

func TestPreviewDue(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	stored := metav1.Condition{Type: PreviewCondition, Status: metav1.ConditionFalse, Reason: "Blocked",
		Message: "22 pending pods are nominated to it"}
	want := func(mutate func(*metav1.Condition)) metav1.Condition {
		c := stored
		c.LastTransitionTime = metav1.NewTime(now)
		if mutate != nil {
			mutate(&c)
		}
		return c
	}
	fewer := func(c *metav1.Condition) { c.Message = "5 pending pods are nominated to it" }
	for _, tc := range []struct {
		name      string
		conds     []metav1.Condition
		want      metav1.Condition
		lastWrite time.Time
		due       bool
	}{
		{"no condition yet", nil, want(nil), time.Time{}, true},
		{"unchanged", []metav1.Condition{stored}, want(nil), time.Time{}, false},
		{"status changed", []metav1.Condition{stored}, want(func(c *metav1.Condition) {
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, "Disrupting", "chosen by the last disruption loop"
		}), now, true},
		{"reason changed", []metav1.Condition{stored}, want(func(c *metav1.Condition) { c.Reason = "NotNeeded" }), now, true},
		{"message changed, written 10s ago", []metav1.Condition{stored}, want(fewer), now.Add(-10 * time.Second), false},
		{"message changed, written a minute ago", []metav1.Condition{stored}, want(fewer), now.Add(-PreviewRefresh), true},
		{"message changed, not written by this process", []metav1.Condition{stored}, want(fewer), time.Time{}, true},
		{"other words, written 10s ago", []metav1.Condition{stored}, want(func(c *metav1.Condition) {
			c.Message = "pod web-1 has karpenter.sh/do-not-disrupt"
		}), now.Add(-10 * time.Second), true},
		{"a time moved, written 10s ago", []metav1.Condition{{Type: PreviewCondition, Status: metav1.ConditionFalse, Reason: "Blocked",
			Message: "consolidateAfter 30s passes at 12:00:35"}}, want(func(c *metav1.Condition) {
			c.Message = "consolidateAfter 30s passes at 12:00:47"
		}), now.Add(-10 * time.Second), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := previewDue(tc.conds, tc.want, tc.lastWrite, now); got != tc.due {
				t.Fatalf("previewDue = %v, want %v", got, tc.due)
			}
		})
	}
}

func TestPassing(t *testing.T) {
	preview := []metav1.Condition{{Type: PreviewCondition, Status: metav1.ConditionFalse, Reason: "NotNeeded"}}
	nominated := planner.Candidate{State: "Kept", Nominated: 3, Blockers: []string{"3 pending pods are nominated to it"}}
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		cand  planner.Candidate
		want  bool
	}{
		{"first verdict, held only by nominated pods", nil, nominated, true},
		{"a preview already written", preview, nominated, false},
		{"held by something else too", nil, planner.Candidate{State: "Kept", Nominated: 3,
			Blockers: []string{"3 pending pods are nominated to it", "pod web-1 has karpenter.sh/do-not-disrupt"}}, false},
		{"held by pods of draining nodes", nil, planner.Candidate{State: "Kept",
			Blockers: []string{"1 pods of draining nodes are nominated to it"}}, false},
		{"nothing holds it", nil, planner.Candidate{State: "Kept"}, false},
		{"chosen", nil, planner.Candidate{State: "Disrupting"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := passing(tc.conds, tc.cand); got != tc.want {
				t.Fatalf("passing = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBlocked(t *testing.T) {
	const never = "NodePool p has consolidateAfter: Never"
	for _, tc := range []struct {
		name string
		cand planner.Candidate
		want bool
	}{
		{"nothing holds it", planner.Candidate{}, false},
		{"only its NodePool's policy", planner.Candidate{Policy: never, Blockers: []string{never}}, false},
		{"its policy and a do-not-disrupt pod", planner.Candidate{Policy: never,
			Blockers: []string{never, "pod web-1 has karpenter.sh/do-not-disrupt"}}, true},
		{"a budget, where the NodePool consolidates", planner.Candidate{Blockers: []string{"Empty budget: 0 of 3 allowed"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := blocked(tc.cand); got != tc.want {
				t.Fatalf("blocked = %v, want %v", got, tc.want)
			}
		})
	}
}

package planner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// notReady gives a node a Ready condition of status since ago.
func notReady(n *corev1.Node, status corev1.ConditionStatus, ago time.Duration, now time.Time) {
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status,
		LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
}

// TestNodeRepair: a node NotReady (or Unknown) for longer than the
// toleration is replaced, replacement first when its pods need room, past
// budgets and do-not-disrupt; one within the toleration is not; and none is
// while more than 20% (rounded up) of the NodePool's nodes are unhealthy.
func TestNodeRepair(t *testing.T) {
	frozen := func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("Never")
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
	}
	for _, tc := range []struct {
		name  string
		build func() *world
		want  want
		check func(*testing.T, *Plan)
	}{{
		name: "NotReady past the toleration: replaced first, budget 0 and do-not-disrupt notwithstanding",
		build: func() *world {
			w := newWorld(pool("p", frozen))
			_, n := w.node("a", "p", "c5.xlarge", "on-demand")
			notReady(n, corev1.ConditionFalse, 31*time.Minute, w.now)
			w.pod("a", "3", "4Gi", doNotDisrupt("true"))
			return w
		},
		want: want{commands: []string{"Unhealthy/Replace:a"}},
	}, {
		name: "Unknown past the toleration, pods fit elsewhere: deleted",
		build: func() *world {
			w := newWorld(pool("p", frozen))
			_, n := w.node("a", "p", "c5.xlarge", "on-demand")
			notReady(n, corev1.ConditionUnknown, time.Hour, w.now)
			w.node("b", "p", "m5.4xlarge", "on-demand")
			w.pod("a", "1", "1Gi", nil)
			return w
		},
		want: want{commands: []string{"Unhealthy/Delete:a"}},
	}, {
		name: "within the toleration: kept",
		build: func() *world {
			w := newWorld(pool("p", frozen))
			_, n := w.node("a", "p", "c5.xlarge", "on-demand")
			notReady(n, corev1.ConditionFalse, 29*time.Minute, w.now)
			return w
		},
		want: want{},
	}, {
		name: "more than 20% of the pool unhealthy: repair blocked, and said",
		build: func() *world {
			w := newWorld(pool("p", frozen))
			for _, name := range []string{"a", "b", "c", "d", "e"} {
				_, n := w.node(name, "p", "c5.xlarge", "on-demand")
				if name == "a" || name == "b" {
					notReady(n, corev1.ConditionFalse, time.Hour, w.now)
				}
			}
			return w
		},
		want: want{blockers: map[string]string{"a": "node repair is blocked: 2 of the 5 nodes", "b": "more than 1 (20%)"}},
		check: func(t *testing.T, p *Plan) {
			if p.RepairBlocked["p"] == "" {
				t.Errorf("RepairBlocked = %v, want NodePool p", p.RepairBlocked)
			}
		},
	}, {
		name: "one of five unhealthy is within 20%: repaired",
		build: func() *world {
			w := newWorld(pool("p", frozen))
			for _, name := range []string{"a", "b", "c", "d", "e"} {
				_, n := w.node(name, "p", "c5.xlarge", "on-demand")
				if name == "c" {
					notReady(n, corev1.ConditionFalse, time.Hour, w.now)
				}
			}
			return w
		},
		want: want{commands: []string{"Unhealthy/Delete:c"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.build().decide()
			check(t, p, tc.want)
			if tc.check != nil {
				tc.check(t, p)
			}
			// A repair names the condition that failed, for
			// karpenter_nodeclaims_unhealthy_disrupted_total.
			for _, c := range p.Commands {
				if c.Reason == ReasonUnhealthy && c.Condition != string(corev1.NodeReady) {
					t.Errorf("repair of %v: Condition %q, want Ready", c.Claims, c.Condition)
				}
			}
		})
	}
}

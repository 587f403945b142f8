package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/disruption/budget"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// want is what a case expects of the plan: the commands as
// "Reason/Method:claim,claim", and the blockers of kept nodes by substring.
type want struct {
	commands  []string
	attrition []string
	blockers  map[string]string // claim -> substring of one of its blockers
}

func commandsOf(p *Plan) []string {
	var out []string
	for _, c := range p.Commands {
		out = append(out, string(c.Reason)+"/"+string(c.Method)+":"+strings.Join(c.Claims, ","))
	}
	return out
}

func check(t *testing.T, p *Plan, w want) {
	t.Helper()
	if got := commandsOf(p); strings.Join(got, " ") != strings.Join(w.commands, " ") {
		t.Errorf("commands = %v, want %v", got, w.commands)
	}
	var att []string
	for _, a := range p.Attrition {
		att = append(att, a.Claim)
	}
	if strings.Join(att, " ") != strings.Join(w.attrition, " ") {
		t.Errorf("attrition = %v, want %v", att, w.attrition)
	}
	for claim, sub := range w.blockers {
		found := false
		for _, c := range p.Candidates {
			if c.Claim == claim {
				found = true
				if !strings.Contains(strings.Join(c.Blockers, "; "), sub) {
					t.Errorf("%s blockers = %q, want one containing %q", claim, c.Blockers, sub)
				}
			}
		}
		if !found {
			t.Errorf("%s is not a candidate", claim)
		}
	}
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name  string
		build func() *world
		opts  []func(*Input)
		want  want
	}{{
		name: "an empty node is deleted",
		build: func() *world {
			w := newWorld(pool("p"))
			w.node("a", "p", "c5.xlarge", "on-demand")
			return w
		},
		want: want{commands: []string{"Empty/Delete:a"}},
	}, {
		name: "an empty node waits for consolidateAfter since its last pod event",
		build: func() *world {
			w := newWorld(pool("p", func(np *karpv1.NodePool) {
				np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("10m")
			}))
			nc, _ := w.node("a", "p", "c5.xlarge", "on-demand")
			nc.Status.LastPodEventTime = metav1.NewTime(w.now.Add(-4 * time.Minute))
			return w
		},
		want: want{blockers: map[string]string{"a": "consolidateAfter: 10m0s after the last pod event, at 2026-11-23T12:06:00Z"}},
	}, {
		name: "consolidateAfter Never keeps even an empty node",
		build: func() *world {
			w := newWorld(pool("p", func(np *karpv1.NodePool) {
				np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("Never")
			}))
			w.node("a", "p", "c5.xlarge", "on-demand")
			return w
		},
		want: want{blockers: map[string]string{"a": "consolidateAfter: Never"}},
	}, {
		name: "a node whose pods fit on another is deleted",
		build: func() *world {
			w := newWorld(pool("p"))
			w.node("a", "p", "c5.2xlarge", "on-demand")
			w.node("b", "p", "c5.2xlarge", "on-demand")
			w.pod("a", "1", "1Gi", nil)
			w.pod("a", "1", "1Gi", nil)
			w.pod("b", "500m", "1Gi", nil)
			return w
		},
		want: want{commands: []string{"Underutilized/Delete:b"}},
	}, {
		name: "two half-empty nodes are replaced by one cheaper node",
		build: func() *world {
			w := newWorld(pool("p"))
			w.node("a", "p", "m5.2xlarge", "on-demand")
			w.node("b", "p", "m5.2xlarge", "on-demand")
			w.pod("a", "5", "4Gi", nil)
			w.pod("b", "5", "4Gi", nil)
			return w
		},
		want: want{commands: []string{"Underutilized/Replace:a,b"}},
	}, {
		name: "a node is replaced by a cheaper one alone",
		build: func() *world {
			w := newWorld(pool("p"))
			w.node("a", "p", "m5.4xlarge", "on-demand")
			w.pod("a", "1", "1Gi", nil)
			return w
		},
		want: want{commands: []string{"Underutilized/Replace:a"}},
	}, {
		name: "WhenEmpty does not consolidate a node with pods",
		build: func() *world {
			w := newWorld(pool("p", func(np *karpv1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
			}))
			w.node("a", "p", "m5.4xlarge", "on-demand")
			w.pod("a", "1", "1Gi", nil)
			return w
		},
		want: want{},
	}, {
		name: "a do-not-disrupt pod keeps its node from consolidation",
		build: func() *world {
			w := newWorld(pool("p"))
			w.node("a", "p", "m5.4xlarge", "on-demand")
			w.pod("a", "1", "1Gi", doNotDisrupt("true"))
			return w
		},
		want: want{blockers: map[string]string{"a": "do-not-disrupt"}},
	}, {
		name: "a do-not-disrupt duration that lapsed no longer holds",
		build: func() *world {
			w := newWorld(pool("p"))
			w.node("a", "p", "m5.4xlarge", "on-demand")
			w.pod("a", "1", "1Gi", doNotDisrupt("10m"))
			return w
		},
		want: want{commands: []string{"Underutilized/Replace:a"}},
	}, {
		name: "a spot node is not replaced without spot-to-spot",
		build: func() *world {
			w := newWorld(pool("p"))
			w.node("a", "p", "m5.4xlarge", "spot")
			w.pod("a", "1", "1Gi", nil)
			return w
		},
		want: want{blockers: map[string]string{"a": "spot-to-spot consolidation is off"}},
	}, {
		name: "a spot node is replaced with spot-to-spot",
		build: func() *world {
			w := newWorld(pool("p"))
			w.node("a", "p", "m5.4xlarge", "spot")
			w.pod("a", "1", "1Gi", nil)
			return w
		},
		opts: []func(*Input){func(in *Input) { in.Options.SpotToSpot = true }},
		want: want{commands: []string{"Underutilized/Replace:a"}},
	}, {
		name: "a budget of 0 keeps the node, and says which budget",
		build: func() *world {
			w := newWorld(pool("p", func(np *karpv1.NodePool) { np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}} }))
			w.node("a", "p", "c5.xlarge", "on-demand")
			return w
		},
		want: want{blockers: map[string]string{"a": "Empty budget"}},
	}, {
		name: "a drifted node is replaced when its pods need room",
		build: func() *world {
			np := pool("p", func(np *karpv1.NodePool) {
				np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("Never")
			})
			w := newWorld(np)
			w.node("a", "p", "c5.xlarge", "on-demand")
			w.pod("a", "3", "4Gi", nil)
			np.Spec.Template.Labels = map[string]string{"team": "new"}
			return w
		},
		want: want{commands: []string{"Drifted/Replace:a"}},
	}, {
		name: "a drifted node held by do-not-disrupt waits without terminationGracePeriod",
		build: func() *world {
			np := pool("p", func(np *karpv1.NodePool) {
				np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("Never")
			})
			w := newWorld(np)
			w.node("a", "p", "c5.xlarge", "on-demand")
			w.pod("a", "3", "4Gi", doNotDisrupt("true"))
			np.Spec.Template.Labels = map[string]string{"team": "new"}
			return w
		},
		want: want{blockers: map[string]string{"a": "do-not-disrupt"}},
	}, {
		name: "a drifted node held by do-not-disrupt is replaced with terminationGracePeriod",
		build: func() *world {
			np := pool("p", func(np *karpv1.NodePool) {
				np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("Never")
				np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
			})
			w := newWorld(np)
			w.node("a", "p", "c5.xlarge", "on-demand")
			w.pod("a", "3", "4Gi", doNotDisrupt("true"))
			np.Spec.Template.Labels = map[string]string{"team": "new"}
			return w
		},
		want: want{commands: []string{"Drifted/Replace:a"}},
	}, {
		name: "drift respects the Drifted budget",
		build: func() *world {
			np := pool("p", func(np *karpv1.NodePool) {
				np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("Never")
				np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}}
			})
			w := newWorld(np)
			w.node("a", "p", "c5.xlarge", "on-demand")
			w.node("b", "p", "c5.xlarge", "on-demand")
			w.pod("a", "3", "4Gi", nil)
			w.pod("b", "3", "4Gi", nil)
			np.Spec.Template.Labels = map[string]string{"team": "new"}
			return w
		},
		want: want{commands: []string{"Drifted/Replace:a"}, blockers: map[string]string{"b": "Drifted budget"}},
	}, {
		name: "a drifted empty node the Drifted budget holds still goes as Empty under its own budget",
		build: func() *world {
			np := pool("p", func(np *karpv1.NodePool) {
				np.Annotations[budget.IndependentReasonBudgetsAnnotation] = "true"
				np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
				np.Spec.Disruption.Budgets = []karpv1.Budget{
					{Nodes: "1", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}},
					{Nodes: "1", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonEmpty}}}
			})
			w := newWorld(np)
			a, _ := w.node("a", "p", "c5.xlarge", "on-demand")
			w.node("b", "p", "c5.large", "on-demand")                       // too small for a's pod
			a.CreationTimestamp = metav1.NewTime(w.now.Add(-2 * time.Hour)) // oldest: drifts first
			w.pod("a", "3", "4Gi", nil)
			np.Spec.Template.Labels = map[string]string{"team": "new"}
			return w
		},
		want: want{commands: []string{"Drifted/Replace:a", "Empty/Delete:b"}},
	}, {
		name: "a node that receives a drifted node's pods is not emptied in the same loop",
		build: func() *world {
			np := pool("p", func(np *karpv1.NodePool) {
				np.Annotations[budget.IndependentReasonBudgetsAnnotation] = "true"
				np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
				np.Spec.Disruption.Budgets = []karpv1.Budget{
					{Nodes: "1", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}},
					{Nodes: "1", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonEmpty}}}
			})
			w := newWorld(np)
			a, _ := w.node("a", "p", "c5.xlarge", "on-demand")
			w.node("b", "p", "c5.xlarge", "on-demand")
			a.CreationTimestamp = metav1.NewTime(w.now.Add(-2 * time.Hour)) // oldest: drifts first
			w.pod("a", "3", "4Gi", nil)
			np.Spec.Template.Labels = map[string]string{"team": "new"}
			return w
		},
		want: want{commands: []string{"Drifted/Delete:a"}, blockers: map[string]string{"b": "receives the pods"}},
	}, {
		name: "an expired node goes despite do-not-disrupt and a zero budget",
		build: func() *world {
			w := newWorld(pool("p", func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("30m")
				np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
			}))
			w.node("a", "p", "c5.xlarge", "on-demand")
			w.pod("a", "1", "1Gi", doNotDisrupt("true"))
			return w
		},
		want: want{commands: []string{"Expired/Delete:a"}},
	}, {
		name: "drain by attrition taints a node held only by do-not-disrupt pods when others have room",
		build: func() *world {
			w := newWorld(pool("p", func(np *karpv1.NodePool) { np.Annotations[DrainByAttritionAnnotation] = "true" }))
			w.node("a", "p", "c5.2xlarge", "on-demand")
			w.node("b", "p", "c5.2xlarge", "on-demand")
			w.pod("a", "1", "1Gi", doNotDisrupt("true"))
			w.pod("b", "2", "2Gi", doNotDisrupt("true"))
			return w
		},
		want: want{attrition: []string{"a"}, blockers: map[string]string{"b": "do-not-disrupt"}},
	}, {
		name: "without drain by attrition the node is only kept",
		build: func() *world {
			w := newWorld(pool("p"))
			w.node("a", "p", "c5.2xlarge", "on-demand")
			w.node("b", "p", "c5.2xlarge", "on-demand")
			w.pod("a", "1", "1Gi", doNotDisrupt("true"))
			w.pod("b", "2", "2Gi", doNotDisrupt("true"))
			return w
		},
		want: want{blockers: map[string]string{"a": "do-not-disrupt", "b": "do-not-disrupt"}},
	}, {
		name: "a node drained by attrition goes the moment its last protected pod ends",
		build: func() *world {
			w := newWorld(pool("p", func(np *karpv1.NodePool) {
				np.Annotations[DrainByAttritionAnnotation] = "true"
				np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("1h")
			}))
			nc, n := w.node("a", "p", "c5.2xlarge", "on-demand")
			nc.Status.LastPodEventTime = metav1.NewTime(w.now.Add(-time.Second))
			n.Spec.Taints = []corev1.Taint{{Key: AttritionTaintKey, Effect: corev1.TaintEffectNoSchedule, TimeAdded: ptr(metav1.NewTime(w.now.Add(-5 * time.Minute)))}}
			return w
		},
		want: want{commands: []string{"Empty/Delete:a"}},
	}, {
		name: "a node draining by attrition keeps draining when the others fill up",
		build: func() *world {
			w := newWorld(pool("p", func(np *karpv1.NodePool) { np.Annotations[DrainByAttritionAnnotation] = "true" }))
			_, n := w.node("a", "p", "c5.2xlarge", "on-demand")
			w.node("b", "p", "c5.2xlarge", "on-demand")
			n.Spec.Taints = []corev1.Taint{{Key: AttritionTaintKey, Effect: corev1.TaintEffectNoSchedule, TimeAdded: ptr(metav1.NewTime(w.now.Add(-time.Minute)))}}
			w.pod("a", "1", "1Gi", doNotDisrupt("true"))
			w.pod("b", "7", "2Gi", doNotDisrupt("true"))
			return w
		},
		want: want{attrition: []string{"a"}, blockers: map[string]string{"b": "do-not-disrupt"}},
	}, {
		name: "nodes already draining by attrition keep their pods, so one more can drain",
		build: func() *world {
			w := newWorld(pool("p", func(np *karpv1.NodePool) { np.Annotations[DrainByAttritionAnnotation] = "true" }))
			for _, name := range []string{"a", "b"} {
				_, n := w.node(name, "p", "c5.2xlarge", "on-demand")
				n.Spec.Taints = []corev1.Taint{{Key: AttritionTaintKey, Effect: corev1.TaintEffectNoSchedule, TimeAdded: ptr(metav1.NewTime(w.now.Add(-time.Minute)))}}
				w.pod(name, "4", "2Gi", doNotDisrupt("true"))
			}
			w.node("c", "p", "c5.2xlarge", "on-demand")
			w.node("d", "p", "c5.2xlarge", "on-demand")
			w.pod("c", "3", "2Gi", doNotDisrupt("true"))
			w.pod("d", "3", "2Gi", doNotDisrupt("true"))
			return w
		},
		// d has room for c's 3 CPUs, not for a's and b's 8 as well: those
		// end where they are and must not be counted as moving.
		want: want{attrition: []string{"a", "b", "c"}, blockers: map[string]string{"d": "do-not-disrupt"}},
	}, {
		name: "the room of nodes draining by attrition counts, and the fullest node with room stays open",
		build: func() *world {
			w := newWorld(pool("p", func(np *karpv1.NodePool) { np.Annotations[DrainByAttritionAnnotation] = "true" }))
			_, n := w.node("a", "p", "c5.2xlarge", "on-demand")
			n.Spec.Taints = []corev1.Taint{{Key: AttritionTaintKey, Effect: corev1.TaintEffectNoSchedule, TimeAdded: ptr(metav1.NewTime(w.now.Add(-time.Minute)))}}
			w.pod("a", "1", "1Gi", doNotDisrupt("true"))
			w.node("b", "p", "c5.2xlarge", "on-demand")
			w.pod("b", "3", "1Gi", doNotDisrupt("true"))
			w.pod("b", "3", "1Gi", doNotDisrupt("true"))
			w.node("c", "p", "c5.2xlarge", "on-demand")
			w.pod("c", "4", "1Gi", doNotDisrupt("true"))
			return w
		},
		// b's 6 CPUs fit only with a's room, and c keeps room for one
		// more of b's 3-CPU pods, so b drains; c stays open, as nothing
		// else would take a pod like its own.
		want: want{attrition: []string{"a", "b"}, blockers: map[string]string{"c": "do-not-disrupt"}},
	}, {
		name: "of nodes as full, the one whose newest pod started last stays open",
		build: func() *world {
			w := newWorld(pool("p", func(np *karpv1.NodePool) { np.Annotations[DrainByAttritionAnnotation] = "true" }))
			w.node("a", "p", "c5.2xlarge", "on-demand")
			w.pod("a", "3", "1Gi", doNotDisrupt("true")).Status.StartTime = ptr(metav1.NewTime(w.now.Add(-time.Minute)))
			w.node("b", "p", "c5.2xlarge", "on-demand")
			w.pod("b", "3", "1Gi", doNotDisrupt("true"))
			return w
		},
		// Either could drain onto the other; a's job began a minute ago
		// and will hold it longest, so a stays open and b, whose job began
		// 30 minutes ago, drains. By name, a drained.
		want: want{attrition: []string{"b"}, blockers: map[string]string{"a": "do-not-disrupt"}},
	}, {
		name: "a node drained by attrition past the maximum wait is deleted",
		build: func() *world {
			w := newWorld(pool("p", func(np *karpv1.NodePool) {
				np.Annotations[DrainByAttritionAnnotation] = "true"
				np.Annotations[AttritionMaxWaitAnnotation] = "10m"
			}))
			_, n := w.node("a", "p", "c5.2xlarge", "on-demand")
			w.node("b", "p", "c5.2xlarge", "on-demand")
			n.Spec.Taints = []corev1.Taint{{Key: AttritionTaintKey, Effect: corev1.TaintEffectNoSchedule, TimeAdded: ptr(metav1.NewTime(w.now.Add(-11 * time.Minute)))}}
			w.pod("a", "1", "1Gi", doNotDisrupt("true"))
			w.pod("b", "2", "2Gi", doNotDisrupt("true"))
			return w
		},
		want: want{commands: []string{"Underutilized/Delete:a"}},
	}, {
		name: "the pods a drain will evict take their room first",
		build: func() *world {
			w := newWorld(pool("p"))
			gone, _ := w.node("gone", "p", "c5.2xlarge", "on-demand")
			gone.DeletionTimestamp = ptr(metav1.NewTime(w.now.Add(-time.Minute)))
			w.pod("gone", "3", "1Gi", nil)
			w.node("a", "p", "c5.2xlarge", "on-demand")
			w.pod("a", "3", "1Gi", doNotDisrupt("true"))
			w.node("b", "p", "c5.2xlarge", "on-demand")
			w.pod("b", "3", "1Gi", nil)
			return w
		},
		// a has room for one 3-CPU pod: gone's, which is about to be
		// evicted, not b's, so b is replaced by a smaller node, not deleted.
		want: want{commands: []string{"Underutilized/Replace:b"}, blockers: map[string]string{"a": "do-not-disrupt"}},
	}, {
		name: "an empty node a draining pod is nominated to is kept",
		build: func() *world {
			w := newWorld(pool("p"))
			gone, _ := w.node("gone", "p", "c5.2xlarge", "on-demand")
			gone.DeletionTimestamp = ptr(metav1.NewTime(w.now.Add(-time.Minute)))
			moving := w.pod("gone", "3", "1Gi", nil)
			nc, _ := w.node("new", "p", "c5.xlarge", "on-demand")
			nc.Annotations[snapshot.NominatedPodsAnnotation] = snapshot.EncodeNominations([]types.UID{moving.UID})
			return w
		},
		want: want{blockers: map[string]string{"new": "1 pods of draining nodes are nominated to it"}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			check(t, tc.build().decide(tc.opts...), tc.want)
		})
	}
}

func TestDecideReportsSavings(t *testing.T) {
	w := newWorld(pool("p"))
	w.node("a", "p", "m5.4xlarge", "on-demand")
	w.pod("a", "1", "1Gi", nil)
	p := w.decide()
	if len(p.Commands) != 1 || p.Commands[0].Savings <= 0 || len(p.Commands[0].Replacements) != 1 {
		t.Fatalf("commands = %+v, want one replacement that saves money", p.Commands)
	}
	if price := p.Commands[0].Replacements[0].Price(); price >= p.Candidates[0].Price {
		t.Errorf("replacement costs $%.4f/h, not less than the node's $%.4f/h", price, p.Candidates[0].Price)
	}
}

// A node removed earlier in the loop must not lend its pods' new homes to a
// later command: the expired node's pods are the provisioner's to place,
// and the drifted node's replacements stay in its own NodePool.
func TestReplacementsHoldOnlyTheCandidatesPods(t *testing.T) {
	never := func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("Never")
	}
	old := pool("old", never, func(np *karpv1.NodePool) { np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("30m") })
	drifting := pool("drifting", never)
	w := newWorld(old, drifting)
	w.node("a", "old", "c5.xlarge", "on-demand")
	w.node("b", "drifting", "c5.xlarge", "on-demand")
	for node, np := range map[string]string{"a": "old", "b": "drifting"} {
		p := w.pod(node, "3", "4Gi", nil)
		p.Spec.NodeSelector = map[string]string{karpv1.NodePoolLabelKey: np}
	}
	drifting.Spec.Template.Labels = map[string]string{"team": "new"}
	p := w.decide()
	check(t, p, want{commands: []string{"Expired/Delete:a", "Drifted/Replace:b"}})
	for _, cmd := range p.Commands {
		for _, r := range cmd.Replacements {
			if cmd.Reason != karpv1.DisruptionReasonDrifted || r.NodePool != "drifting" {
				t.Errorf("%s command has a replacement in NodePool %s", cmd.Reason, r.NodePool)
			}
			for _, pod := range r.Pods {
				if pod.Spec.NodeSelector[karpv1.NodePoolLabelKey] != "drifting" {
					t.Errorf("replacement for %v holds pod %s of another NodePool", cmd.Claims, pod.Name)
				}
			}
		}
	}
}

// A replacement that initialized while the node it replaces still drains is
// neither emptied nor filled: its room is for that node's pods.
func TestReplacementRoomIsKept(t *testing.T) {
	w := newWorld(pool("p"))
	old, oldNode := w.node("a", "p", "c5.2xlarge", "on-demand")
	old.Annotations[DisruptingAnnotation] = string(karpv1.DisruptionReasonDrifted)
	old.Annotations[ReplacementsAnnotation] = "r"
	oldNode.Spec.Taints = []corev1.Taint{karpv1.DisruptedNoScheduleTaint}
	w.pod("a", "3", "4Gi", nil)
	w.node("r", "p", "c5.xlarge", "on-demand")
	w.node("b", "p", "c5.2xlarge", "on-demand")
	w.pod("b", "1", "1Gi", nil)
	p := w.decide()
	check(t, p, want{commands: []string{"Underutilized/Replace:b"}, blockers: map[string]string{"r": "replacement for a"}})
}

func TestCandidateCountsPendingNominations(t *testing.T) {
	for _, tc := range []struct {
		name          string
		initializedAt time.Duration // before now
		want          int
		blocker       string
	}{
		{"within the grace", -10 * time.Second, 1, "1 pending pods are nominated to it"},
		{"past the grace", -2 * time.Minute, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(pool("p"))
			nc, _ := w.node("new", "p", "c5.xlarge", "on-demand")
			nc.Status.Conditions[0].LastTransitionTime = metav1.NewTime(w.now.Add(tc.initializedAt))
			waiting := w.pod("", "1", "1Gi", nil)
			nc.Annotations[snapshot.NominatedPodsAnnotation] = snapshot.EncodeNominations([]types.UID{waiting.UID})
			p := w.decide()
			if len(p.Candidates) != 1 {
				t.Fatalf("%d candidates, want 1", len(p.Candidates))
			}
			c := p.Candidates[0]
			if c.Nominated != tc.want {
				t.Errorf("Nominated = %d, want %d", c.Nominated, tc.want)
			}
			if got := strings.Join(c.Blockers, "; "); !strings.Contains(got, tc.blocker) || (tc.blocker == "" && strings.Contains(got, "nominated")) {
				t.Errorf("blockers %q, want one naming %q", got, tc.blocker)
			}
		})
	}
}

func TestCandidatePolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*karpv1.NodePool)
		want   string
	}{
		{"consolidates", nil, ""},
		{"consolidateAfter: Never", func(np *karpv1.NodePool) {
			np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("Never")
		}, "NodePool p has consolidateAfter: Never"},
		{"static", func(np *karpv1.NodePool) { np.Spec.Replicas = ptr(int64(1)) }, "NodePool p is static (spec.replicas): its nodes are never consolidated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mutate []func(*karpv1.NodePool)
			if tc.mutate != nil {
				mutate = append(mutate, tc.mutate)
			}
			w := newWorld(pool("p", mutate...))
			w.node("a", "p", "c5.xlarge", "on-demand")
			w.pod("a", "1", "1Gi", doNotDisrupt("true"))
			p := w.decide()
			if len(p.Candidates) != 1 {
				t.Fatalf("%d candidates, want 1", len(p.Candidates))
			}
			if got := p.Candidates[0].Policy; got != tc.want {
				t.Errorf("Policy = %q, want %q", got, tc.want)
			}
		})
	}
}

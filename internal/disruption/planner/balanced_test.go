package planner

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func balancedPool(name string) *karpv1.NodePool {
	return pool(name, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyBalanced
	})
}

// TestBalancedConsolidation: a Balanced NodePool consolidates only moves
// whose share of the NodePool's savings is at least half their share of
// its disruption; WhenEmptyOrUnderutilized takes any saving.
func TestBalancedConsolidation(t *testing.T) {
	// Four nodes: three busy m5.xlarge with 3 pods each, and one
	// m5.4xlarge with a single small pod: most of the pool's cost for 1
	// pod of 10.
	bigIdle := func(w *world, pool string) {
		for _, n := range []string{"a", "b", "c"} {
			w.node(n, pool, "m5.xlarge", "on-demand")
			for i := 0; i < 3; i++ {
				w.pod(n, "1", "1Gi", nil)
			}
		}
		w.node("d", pool, "m5.4xlarge", "on-demand")
		w.pod("d", "100m", "128Mi", nil)
	}
	// Two m5.xlarge with one large pod each, where replacing one by a
	// c5.xlarge saves 11% of its price, 6% of the pool's cost, and
	// disrupts half the pool.
	marginal := func(w *world, pool string) {
		for _, n := range []string{"a", "b"} {
			w.node(n, pool, "m5.xlarge", "on-demand")
			w.pod(n, "3", "5Gi", nil)
		}
	}
	for _, tc := range []struct {
		name     string
		policy   karpv1.ConsolidationPolicy
		build    func(*world, string)
		commands []string
		blocker  map[string]string
		score    func(*testing.T, *Plan)
	}{
		{name: "Balanced takes a big saving for little disruption",
			policy: karpv1.ConsolidationPolicyBalanced, build: bigIdle,
			// d and a onto one c5.xlarge saves 59% of the pool's cost for
			// 40% of its disruption.
			commands: []string{"Underutilized/Replace:d,a"},
			score: func(t *testing.T, p *Plan) {
				s := p.Commands[0].Scores
				if len(s) != 1 || !s[0].Approved || math.Abs(s[0].DisruptionFraction-0.4) > 1e-9 {
					t.Errorf("scores = %+v, want one approved, with 40%% of the disruption", s)
				}
			}},
		{name: "Balanced refuses a small saving for much disruption", policy: karpv1.ConsolidationPolicyBalanced, build: marginal,
			blocker: map[string]string{"a": "not worth the disruption: Balanced score 0."},
			score: func(t *testing.T, p *Plan) {
				if len(p.Rejected) == 0 {
					t.Fatal("no rejected score recorded")
				}
				for _, s := range p.Rejected {
					if s.Approved || s.Value >= BalancedThreshold || s.DisruptionFraction != 0.5 {
						t.Errorf("rejected score %+v: want below %.2f with half the pool's disruption", s, BalancedThreshold)
					}
				}
			}},
		{name: "WhenEmptyOrUnderutilized takes the same small saving", policy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, build: marginal,
			commands: []string{"Underutilized/Replace:a"},
			score: func(t *testing.T, p *Plan) {
				if len(p.Commands[0].Scores) != 0 || len(p.Rejected) != 0 {
					t.Errorf("a non-Balanced pool was scored: %+v %+v", p.Commands[0].Scores, p.Rejected)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := pool("p", func(np *karpv1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = tc.policy
				np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
					Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.xlarge", "m5.xlarge", "m5.4xlarge"}}}, {
					NodeSelectorRequirement: corev1.NodeSelectorRequirement{
						Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}}}}
			})
			w := newWorld(np)
			tc.build(w, "p")
			p := w.decide()
			check(t, p, want{commands: tc.commands, blockers: tc.blocker})
			if !t.Failed() {
				tc.score(t, p)
			}
		})
	}
}

func TestEvictionCost(t *testing.T) {
	prio := func(v int32) *int32 { return &v }
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want float64
	}{
		{"default", corev1.Pod{}, 1},
		{"priority 2^25", corev1.Pod{Spec: corev1.PodSpec{Priority: prio(1 << 25)}}, 2},
		{"system-critical clamps at 10", corev1.Pod{Spec: corev1.PodSpec{Priority: prio(2000001000)}}, 10},
		{"negative deletion cost", func() corev1.Pod {
			p := corev1.Pod{}
			p.Annotations = map[string]string{corev1.PodDeletionCost: "-268435456"}
			return p
		}(), -1},
		{"unparseable deletion cost is ignored", func() corev1.Pod {
			p := corev1.Pod{}
			p.Annotations = map[string]string{corev1.PodDeletionCost: "lots"}
			return p
		}(), 1},
	} {
		if got := evictionCost(&tc.pod); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: evictionCost = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestScoreString(t *testing.T) {
	s := Score{NodePool: "p", Value: 0.25, SavingsFraction: 0.05, DisruptionFraction: 0.2}
	if got := s.String(); !strings.Contains(got, "0.25 < 0.50") || !strings.Contains(got, "saves 5.0%") || !strings.Contains(got, "disrupts 20.0%") {
		t.Errorf("String() = %q", got)
	}
}

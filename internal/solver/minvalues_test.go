package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
)

// TestMinValuesPolicy: a pod that only one instance type of a NodePool with
// minValues 3 can hold is unschedulable under Strict; under BestEffort it
// gets a NodeClaim whose minValues is lowered to the one type left, marked
// relaxed, while claims that can keep minValues still do.
func TestMinValuesPolicy(t *testing.T) {
	pool := defaultPool(func(np *solver.NodePool) {
		mv := 3
		np.Requirements = scheduling.NewRequirements(scheduling.NewRequirementWithMinValues(corev1.LabelInstanceTypeStable,
			corev1.NodeSelectorOpIn, &mv, "fake-it-13", "fake-it-14", "fake-it-15"))
	})
	// Only the largest type holds 14.5 vCPU; 1 vCPU fits all three.
	huge := func() *corev1.Pod { return mkPod("huge", "14500m", "1Gi") }
	small := func() *corev1.Pod { return mkPod("small", "1", "1Gi") }
	for _, tc := range []struct {
		name       string
		bestEffort bool
		pods       []*corev1.Pod
		placed     []string
		relaxed    map[string]int // pod -> minValues on its claim (0: 3 kept)
	}{
		{name: "Strict refuses the pod that would break minValues", pods: []*corev1.Pod{huge(), small()},
			placed: []string{"small"}, relaxed: map[string]int{"small": 0}},
		{name: "BestEffort launches it with minValues lowered to what is left; the small pod shares its node",
			bestEffort: true, pods: []*corev1.Pod{huge(), small()},
			placed: []string{"huge", "small"}, relaxed: map[string]int{"huge": 1, "small": 1}},
		{name: "BestEffort relaxes nothing it need not", bestEffort: true, pods: []*corev1.Pod{small()},
			placed: []string{"small"}, relaxed: map[string]int{"small": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := solver.Solve(&solver.Input{NodePools: []solver.NodePool{pool}, Pods: tc.pods, MinValuesBestEffort: tc.bestEffort})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range plan.NewClaims {
				if (c.MinValuesRelaxed != nil) != tc.bestEffort {
					t.Errorf("claim of %d pods: MinValuesRelaxed %v, want set exactly under BestEffort", len(c.Pods), c.MinValuesRelaxed)
				}
			}
			if got := len(plan.Placements); got != len(tc.placed) {
				for _, u := range plan.Unschedulable {
					t.Logf("%s: %s", u.Pod.Name, u.Reason)
				}
				t.Fatalf("%d pods placed, want %v (unschedulable: %d)", got, tc.placed, len(plan.Unschedulable))
			}
			if !tc.bestEffort && len(tc.pods) == 2 && (len(plan.Unschedulable) != 1 || plan.Unschedulable[0].Pod.Name != "huge") {
				t.Fatalf("Strict: unschedulable %v, want huge", plan.Unschedulable)
			}
			for pod, want := range tc.relaxed {
				c := claimOf(plan, pod)
				if c == nil {
					t.Fatalf("%s has no new claim", pod)
				}
				mv := c.Requirements.Get(corev1.LabelInstanceTypeStable).MinValues()
				switch {
				case want == 0 && ((c.MinValuesRelaxed != nil && *c.MinValuesRelaxed) || mv == nil || *mv != 3):
					t.Errorf("%s: claim relaxed=%v minValues=%v types=%d, want minValues 3 kept", pod, c.MinValuesRelaxed, mv, len(c.InstanceTypes))
				case want > 0 && (c.MinValuesRelaxed == nil || !*c.MinValuesRelaxed || mv == nil || *mv != want || len(c.InstanceTypes) != want):
					t.Errorf("%s: claim relaxed=%v minValues=%v types=%d, want relaxed to %d", pod, c.MinValuesRelaxed, mv, len(c.InstanceTypes), want)
				}
			}
		})
	}
}

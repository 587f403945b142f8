package solver_test

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
)

// cpuLabelled gives each small type an integer label with its vCPU count, as
// providers do (karpenter.k8s.aws/instance-cpu, say).
func cpuLabelled() []*instancetype.InstanceType {
	var out []*instancetype.InstanceType
	for i, it := range smallTypes() {
		c := *it
		c.Requirements = it.Requirements.Copy()
		c.Requirements.Add(scheduling.NewRequirement("example.com/instance-cpu", corev1.NodeSelectorOpIn, strconv.Itoa(i+1)))
		out = append(out, &c)
	}
	return out
}

// TestNodePoolIntegerOperators: Karpenter's Gte and Lte (and Gt, Lt) in a
// NodePool's requirements select instance types by an integer label.
func TestNodePoolIntegerOperators(t *testing.T) {
	cases := []struct {
		op       corev1.NodeSelectorOperator
		value    string
		min, max int // allowed vCPU range
	}{
		{scheduling.OpGte, "4", 4, 16},
		{scheduling.OpLte, "4", 1, 4},
		{corev1.NodeSelectorOpGt, "4", 5, 16},
		{corev1.NodeSelectorOpLt, "4", 1, 3},
	}
	for _, tc := range cases {
		t.Run(string(tc.op), func(t *testing.T) {
			np := solver.NodePool{Name: "default", InstanceTypes: cpuLabelled(),
				Requirements: scheduling.NewRequirements(scheduling.NewRequirement("example.com/instance-cpu", tc.op, tc.value))}
			plan, err := solver.Solve(&solver.Input{NodePools: []solver.NodePool{np}, Pods: []*corev1.Pod{mkPod("p", "100m", "100Mi")}})
			if err != nil {
				t.Fatal(err)
			}
			allPlaced(t, plan)
			c := claimOf(plan, "p")
			if c == nil {
				t.Fatal("no claim")
			}
			for _, it := range c.InstanceTypes {
				n, _ := strconv.Atoi(it.Requirements.Labels()["example.com/instance-cpu"])
				if n < tc.min || n > tc.max {
					t.Errorf("%s %s allowed %s (%d vCPU)", tc.op, tc.value, it.Name, n)
				}
			}
			if got := c.InstanceTypes[0].Requirements.Labels()["example.com/instance-cpu"]; got != strconv.Itoa(tc.min) {
				t.Errorf("cheapest type has %s vCPU, want the smallest allowed, %d", got, tc.min)
			}
		})
	}
}

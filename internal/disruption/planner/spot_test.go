package planner

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// TestSpotToSpotFlexibility: Karpenter's guard on spot replacements. With
// every type of the catalog, a spot m5.4xlarge holding a 1-CPU pod has
// plenty of cheaper options and is replaced by one offering exactly the 15
// cheapest; limited to the c5 family it has a handful and is kept, saying why; a
// lower minimum lets it go.
func TestSpotToSpotFlexibility(t *testing.T) {
	spotOn := func(min int) func(*Input) {
		return func(in *Input) { in.Options.SpotToSpot = true; in.Options.SpotToSpotMinTypes = min }
	}
	w := newWorld(pool("p"))
	w.node("a", "p", "m5.4xlarge", "spot")
	w.pod("a", "1", "1Gi", nil)
	plan := w.decide(spotOn(0))
	if len(plan.Commands) != 1 || len(plan.Commands[0].Replacements) != 1 {
		t.Fatalf("commands %v, want one replacement", commandsOf(plan))
	}
	if n := len(plan.Commands[0].Replacements[0].InstanceTypes); n != DefaultSpotToSpotMinTypes {
		t.Errorf("the replacement offers %d instance types, want the %d cheapest", n, DefaultSpotToSpotMinTypes)
	}

	c5 := func() *world {
		w := newWorld(pool("p", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
				NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn,
					Values: []string{"c5.large", "c5.xlarge", "c5.2xlarge", "c5.4xlarge"}}})
		}))
		w.node("a", "p", "c5.4xlarge", "spot")
		w.pod("a", "1", "1Gi", nil)
		return w
	}
	check(t, c5().decide(spotOn(0)), want{blockers: map[string]string{"a": "needs 15 cheaper instance type options than the current one, found "}})
	plan = c5().decide(spotOn(3))
	if got := commandsOf(plan); len(got) != 1 || !strings.HasPrefix(got[0], "Underutilized/Replace:a") {
		t.Errorf("with a minimum of 3, commands %v, want the node replaced", got)
	}
}

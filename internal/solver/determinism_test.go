package solver_test

import (
	"fmt"
	"testing"

	"github.com/nodewright/nodewright/internal/solver"
)

// fingerprint writes a plan as text: every placement in order, and every
// claim's pool, requirements and cheapest type.
func fingerprint(plan *solver.Plan) string {
	s := ""
	for _, pl := range plan.Placements {
		s += fmt.Sprintf("%s>%s/%d;", pl.Pod.Name, pl.Node, pl.NewClaim)
	}
	for _, c := range plan.NewClaims {
		s += fmt.Sprintf("|%s %s %s", c.NodePool, c.Requirements, c.InstanceTypes[0].Name)
	}
	for _, u := range plan.Unschedulable {
		s += "!" + u.Pod.Name
	}
	return s
}

func TestSameInputSamePlan(t *testing.T) {
	t.Logf("seed %d", benchSeed)
	first, err := solver.Solve(benchInput(1000))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		again, err := solver.Solve(benchInput(1000))
		if err != nil {
			t.Fatal(err)
		}
		if fingerprint(first) != fingerprint(again) {
			t.Fatalf("solve %d differs from the first", i+2)
		}
	}
	if len(first.Unschedulable) != 0 {
		t.Errorf("%d pods unschedulable", len(first.Unschedulable))
	}
}

package plancheck_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/plancheck"
	"github.com/nodewright/nodewright/internal/solver"
	"github.com/nodewright/nodewright/internal/workload"
)

// TestSolverDiverse checks the solver's plans for Karpenter's benchmark mix:
// every pod placed, and kube-scheduler would bind every placement.
func TestSolverDiverse(t *testing.T) {
	const seed = 42
	for _, n := range []int{1000, 5000} {
		t.Run(fmt.Sprintf("pods=%d", n), func(t *testing.T) {
			t.Logf("workload.DiversePods(%d, seed %d), 400 benchmark instance types", n, seed)
			in := &solver.Input{
				NodePools: []solver.NodePool{{Name: "default", InstanceTypes: workload.BenchmarkInstanceTypes(400)}},
				Pods:      workload.DiversePods(n, seed),
			}
			start := time.Now()
			plan, err := solver.Solve(in)
			if err != nil {
				t.Fatalf("Solve: %v", err)
			}
			solved := time.Now()
			vs := plancheck.Check(in, plan)
			t.Logf("solve %v, check %v: %d placements, %d new claims, %d unschedulable, $%.2f/h",
				solved.Sub(start), time.Since(solved), len(plan.Placements), len(plan.NewClaims), len(plan.Unschedulable), plan.Cost())
			for i, u := range plan.Unschedulable {
				if i == 10 {
					t.Errorf("... and %d more unschedulable", len(plan.Unschedulable)-10)
					break
				}
				t.Errorf("unschedulable: %s/%s: %v", u.Pod.Namespace, u.Pod.Name, u.Reason)
			}
			reportViolations(t, vs)
		})
	}
}

// reportViolations fails the test with the first violations and a count per
// constraint.
func reportViolations(t *testing.T, vs []plancheck.Violation) {
	t.Helper()
	if len(vs) == 0 {
		return
	}
	byConstraint := map[string]int{}
	for _, v := range vs {
		byConstraint[v.Constraint]++
	}
	t.Errorf("%d violations %v", len(vs), byConstraint)
	for i, v := range vs {
		if i == 10 {
			t.Errorf("... and %d more", len(vs)-10)
			break
		}
		t.Errorf("%s", v)
	}
}

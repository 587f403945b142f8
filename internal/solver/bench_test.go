package solver_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/plancheck"
	"github.com/nodewright/nodewright/internal/solver"
	"github.com/nodewright/nodewright/internal/workload"
)

// checkPlan fails the benchmark when the independent checker finds a
// constraint the plan breaks; it runs outside the timed part.
func checkPlan(b *testing.B, in *solver.Input, plan *solver.Plan) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	if vs := plancheck.Check(in, plan); len(vs) > 0 {
		for i, v := range vs {
			if i == 10 {
				break
			}
			b.Error(v)
		}
		b.Fatalf("%d violations", len(vs))
	}
}

const benchSeed = 42

func benchInput(pods int) *solver.Input {
	return &solver.Input{
		NodePools: []solver.NodePool{{Name: "default", InstanceTypes: workload.BenchmarkInstanceTypes(400)}},
		Pods:      workload.DiversePods(pods, benchSeed),
	}
}

// solveAndReport times b.N solves of in, checks the last plan with the
// independent checker and reports what a user cares about.
func solveAndReport(b *testing.B, in *solver.Input) *solver.Plan {
	b.Logf("seed %d", benchSeed)
	b.ReportAllocs()
	b.ResetTimer()
	var plan *solver.Plan
	start := time.Now()
	for i := 0; i < b.N; i++ {
		var err error
		if plan, err = solver.Solve(in); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	checkPlan(b, in, plan)
	b.ReportMetric(float64(len(in.Pods)*b.N)/elapsed.Seconds(), "pods/s")
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/solve")
	b.ReportMetric(float64(len(plan.NewClaims)), "nodes")
	b.ReportMetric(plan.Cost(), "$/h")
	b.ReportMetric(float64(len(plan.Unschedulable)), "unschedulable")
	return plan
}

// BenchmarkSolveDiverse is Karpenter core's scheduling benchmark workload, so
// the two can be compared: pods/s, nodes and $/h of the plan.
func BenchmarkSolveDiverse(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000, 100000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			solveAndReport(b, benchInput(n))
		})
	}
}

// BenchmarkSolveLargeCluster: 5,000 existing nodes holding 20,000 bound pods,
// then 40,000 pending pods of the diverse mix, the scale at which users saw
// Karpenter take over half an hour and run out of memory.
func BenchmarkSolveLargeCluster(b *testing.B) {
	types := workload.BenchmarkInstanceTypes(400)
	in := &solver.Input{
		NodePools: []solver.NodePool{{Name: "default", InstanceTypes: types}},
		Pods:      workload.DiversePods(40000, benchSeed+1),
	}
	for _, n := range workload.LargeCluster(5000, 20000, types[15], benchSeed) {
		in.Nodes = append(in.Nodes, solver.Node{Name: n.Name, NodePool: "default", Labels: n.Labels, Allocatable: n.Type.Allocatable(), Pods: n.Pods})
	}
	plan := solveAndReport(b, in)
	onExisting := 0
	for _, pl := range plan.Placements {
		if pl.NewClaim < 0 {
			onExisting++
		}
	}
	b.ReportMetric(float64(onExisting), "on-existing")
}

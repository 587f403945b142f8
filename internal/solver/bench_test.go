package solver_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/solver"
	"github.com/nodewright/nodewright/internal/workload"
)

const benchSeed = 42

func benchInput(pods int) *solver.Input {
	return &solver.Input{
		NodePools: []solver.NodePool{{Name: "default", InstanceTypes: workload.BenchmarkInstanceTypes(400)}},
		Pods:      workload.DiversePods(pods, benchSeed),
	}
}

// BenchmarkSolveDiverse is Karpenter core's scheduling benchmark workload, so
// the two can be compared: pods/s, nodes and $/h of the plan.
func BenchmarkSolveDiverse(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000, 100000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			in := benchInput(n)
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
			b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "pods/s")
			b.ReportMetric(float64(len(plan.NewClaims)), "nodes")
			b.ReportMetric(plan.Cost(), "$/h")
			b.ReportMetric(float64(len(plan.Unschedulable)), "unschedulable")
		})
	}
}

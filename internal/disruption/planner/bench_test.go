package planner

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// BenchmarkDecide2000Nodes times one disruption decision over 2,000 nodes
// of mixed sizes holding 12,000 pods, a tenth of them nearly idle, with
// drift, emptiness and both consolidations considered. Target: 5 s a loop.
func BenchmarkDecide2000Nodes(b *testing.B) {
	b.Run("tenth-idle", func(b *testing.B) { benchDecide(b, false) })
	// Packed: no node can go, so single-node consolidation tries every one
	// of them, the worst case.
	b.Run("packed", func(b *testing.B) { benchDecide(b, true) })
}

func benchDecide(b *testing.B, packed bool) {
	const seed = 42
	b.Logf("random seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	w := newWorld(pool("p"))
	sizes := []string{"m5.xlarge", "m5.2xlarge", "c5.2xlarge", "m5.4xlarge"}
	for i := 0; i < 2000; i++ {
		name := fmt.Sprintf("node-%04d", i)
		if packed {
			// 3.5 of c5.xlarge's 3.92 allocatable vCPUs, amd64 only: no room
			// elsewhere and no cheaper amd64 type.
			w.node(name, "p", "c5.xlarge", "on-demand")
			for j := 0; j < 7; j++ {
				p := w.pod(name, "500m", "512Mi", nil)
				p.Spec.NodeSelector = map[string]string{"kubernetes.io/arch": "amd64"}
			}
			continue
		}
		w.node(name, "p", sizes[rng.Intn(len(sizes))], "on-demand")
		pods := 6
		if i%10 == 0 {
			pods = 1
		}
		for j := 0; j < pods; j++ {
			w.pod(name, "500m", "512Mi", nil)
		}
	}
	var plan *Plan
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		plan = w.decide()
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/loop")
	b.ReportMetric(float64(len(plan.Commands)), "commands")
	disrupted := 0
	for _, c := range plan.Commands {
		disrupted += len(c.Claims)
	}
	b.ReportMetric(float64(disrupted), "nodes-disrupted")
	if packed && disrupted != 0 {
		b.Fatalf("a packed fleet lost %d nodes", disrupted)
	}
}

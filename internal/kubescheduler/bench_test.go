package kubescheduler

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// BenchmarkSchedule binds 5,000 pods of ten Deployments, with the default
// spread constraints, onto 500 nodes in three zones, one decision after
// another as a scheduling pass does.
func BenchmarkSchedule(b *testing.B) {
	const nodes, pods = 500, 5000
	var ns []*corev1.Node
	for i := range nodes {
		ns = append(ns, node(fmt.Sprintf("n%04d", i), fmt.Sprintf("z%d", i%3), "16", "64Gi"))
	}
	var ps []*corev1.Pod
	for i := range pods {
		ps = append(ps, pod(fmt.Sprintf("p%05d", i), "500m", "1Gi", labelled("app", fmt.Sprintf("app%d", i%10))))
	}
	opts := Options{DefaultSpreadSelector: func(p *corev1.Pod) labels.Selector { return labels.SelectorFromSet(p.Labels) }}
	b.ResetTimer()
	for range b.N {
		opts.Cache = NewCache()
		s := NewSnapshot(ns, nil, opts)
		for _, p := range ps {
			d := s.Schedule(p)
			if d.Node == "" {
				b.Fatalf("%s: %s", p.Name, d.Message())
			}
			s.Assume(p, d.Node)
		}
	}
	b.ReportMetric(float64(pods*b.N)/b.Elapsed().Seconds(), "pods/s")
	b.ReportMetric(nodes, "nodes")
}

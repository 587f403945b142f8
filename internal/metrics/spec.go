package metrics

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Type is a Prometheus metric type, as the text exposition format names it.
type Type string

// The metric types nodewright exports.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
	Summary   Type = "summary"
)

// Spec describes one metric nodewright exports. The Specs are the single
// table that docs/metrics.md and the scrape test are checked against, and
// every metric of this package is built from its Spec, so the table cannot
// drift from what is registered.
type Spec struct {
	// Name is the full metric name, karpenter_... or nodewright_...
	Name   string
	Type   Type
	Labels []string
	Help   string
	// Ours marks a metric Karpenter v1.14.1 does not export under this name
	// and these labels: nodewright's own, or a name Karpenter dropped.
	Ours bool
	// Owner names the package that registers the metric when it is not this
	// one; the table lists it so the docs and the scrape test know of it.
	Owner string
}

// specs is every Spec, in the order the metrics were declared.
var specs []Spec

// Specs returns every metric nodewright exports, sorted by name.
func Specs() []Spec {
	out := slices.Clone(specs)
	slices.SortFunc(out, func(a, b Spec) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// declare adds s to the table and returns it.
func declare(s Spec) Spec {
	specs = append(specs, s)
	return s
}

func newCounterVec(s Spec) *prometheus.CounterVec {
	s.Type = Counter
	declare(s)
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: s.Name, Help: s.Help}, s.Labels)
	crmetrics.Registry.MustRegister(v)
	return v
}

func newGaugeVec(s Spec) *prometheus.GaugeVec {
	s.Type = Gauge
	declare(s)
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: s.Name, Help: s.Help}, s.Labels)
	crmetrics.Registry.MustRegister(v)
	return v
}

func newHistogramVec(s Spec, buckets []float64) *prometheus.HistogramVec {
	s.Type = Histogram
	declare(s)
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: s.Name, Help: s.Help, Buckets: buckets}, s.Labels)
	crmetrics.Registry.MustRegister(v)
	return v
}

func newSummaryVec(s Spec) *prometheus.SummaryVec {
	s.Type = Summary
	declare(s)
	v := prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: s.Name, Help: s.Help, Objectives: summaryObjectives()}, s.Labels)
	crmetrics.Registry.MustRegister(v)
	return v
}

// durationBuckets are Karpenter's duration buckets (controller-runtime's,
// extended past a minute), so histogram_quantile over a dashboard's `le`
// gives the same answers for both.
func durationBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
		1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 120, 150, 300, 450, 600}
}

// summaryObjectives are the quantiles Karpenter's summaries publish.
func summaryObjectives() map[float64]float64 {
	return map[float64]float64{0: 0.01, 0.5: 0.01, 0.9: 0.01, 0.99: 0.01, 1: 0.01}
}

// snake turns a Kubernetes reason ("InsufficientCapacity") into the
// lower-case, underscored form Karpenter's label values use
// ("insufficient_capacity").
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 && s[i-1] != '_' && !(s[i-1] >= 'A' && s[i-1] <= 'Z') {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		if r == '-' || r == ' ' {
			r = '_'
		}
		b.WriteRune(r)
	}
	return b.String()
}

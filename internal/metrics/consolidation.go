package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// ConsolidationScore records the score of each consolidation move a
	// Balanced NodePool judged, approved or rejected; Karpenter's name,
	// labels and buckets.
	ConsolidationScore = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "consolidation_score",
		Help:    "Score of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
		Buckets: []float64{0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0},
	}, []string{"decision", "nodepool", "policy"})
	// ConsolidationMoves counts the same moves.
	ConsolidationMoves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "consolidation_moves_total",
		Help: "Number of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
	}, []string{"decision", "nodepool", "policy"})
)

func init() {
	crmetrics.Registry.MustRegister(ConsolidationScore, ConsolidationMoves)
}

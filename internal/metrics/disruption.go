package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// DisruptionDecisions counts disruption commands by method and reason.
	DisruptionDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "voluntary_disruption", Name: "decisions_total",
		Help: "Number of disruption decisions carried out, by decision (Delete, Replace) and reason.",
	}, []string{"decision", "reason"})
	// DisruptionDecisionDuration times the planner.
	DisruptionDecisionDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "voluntary_disruption", Name: "decision_evaluation_duration_seconds",
		Help:    "Duration of one disruption decision over the whole cluster.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
	// EligibleNodes counts the nodes the planner looked at per NodePool.
	EligibleNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "voluntary_disruption", Name: "eligible_nodes",
		Help: "Number of initialized nodes the last disruption loop considered, by NodePool.",
	}, []string{"nodepool"})
	// AllowedDisruptions is what each NodePool's budgets allow now.
	AllowedDisruptions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "nodepools", Name: "allowed_disruptions",
		Help: "Number of nodes that may be disrupted now, by NodePool and reason.",
	}, []string{"nodepool", "reason"})
)

func init() {
	crmetrics.Registry.MustRegister(DisruptionDecisions, DisruptionDecisionDuration, EligibleNodes, AllowedDisruptions)
}

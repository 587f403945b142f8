package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Termination metrics, under Karpenter's names and labels.
var (
	// PodsDrained counts pods evicted while draining a node, by the claim's
	// disruption reason ("Forceful Termination" when it has none).
	PodsDrained = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "pods", Name: "drained_total",
		Help: "Number of pods drained during node termination, by reason.",
	}, []string{"reason"})
	// PodEvictionRequests counts Eviction API calls by HTTP status code.
	PodEvictionRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "pods", Name: "eviction_requests_total",
		Help: "Number of pod eviction requests, by response code.",
	}, []string{"code"})
	// NodesDrained counts nodes whose drain finished, by NodePool.
	NodesDrained = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodes", Name: "drained_total",
		Help: "Number of nodes drained, by NodePool.",
	}, []string{"nodepool"})
	// NodesTerminated counts nodes removed with their NodeClaim, by NodePool.
	NodesTerminated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodes", Name: "terminated_total",
		Help: "Number of nodes terminated, by NodePool.",
	}, []string{"nodepool"})
	// NodeTerminationDuration is the time from a NodeClaim's deletion to the
	// removal of its finalizer.
	NodeTerminationDuration = prometheus.NewSummaryVec(prometheus.SummaryOpts{
		Namespace: namespace, Subsystem: "nodes", Name: "termination_duration_seconds",
		Help:       "Time from a node's deletion request to the removal of its finalizer, in seconds.",
		Objectives: map[float64]float64{0: 0, 0.5: 0.05, 0.9: 0.01, 0.99: 0.001, 1: 0},
	}, []string{"nodepool"})
)

func init() {
	crmetrics.Registry.MustRegister(PodsDrained, PodEvictionRequests, NodesDrained, NodesTerminated, NodeTerminationDuration)
}

// Package metrics defines nodewright's Prometheus metrics. The core ones keep
// Karpenter's names and labels, so dashboards and alerts written for
// Karpenter keep working; they are registered with controller-runtime's
// registry, which the manager serves on its metrics endpoint.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const namespace = "karpenter"

var (
	// NodeClaimsCreated counts NodeClaims created, by reason ("provisioning")
	// and NodePool.
	NodeClaimsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "created_total",
		Help: "Number of NodeClaims created, by reason and NodePool.",
	}, []string{"reason", "nodepool"})
	// NodeClaimsTerminated counts NodeClaims whose deletion finished.
	NodeClaimsTerminated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "terminated_total",
		Help: "Number of NodeClaims terminated, by reason and NodePool.",
	}, []string{"reason", "nodepool"})
	// NodeClaimsLaunched, Registered and Initialized count lifecycle steps.
	NodeClaimsLaunched = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "launched_total",
		Help: "Number of NodeClaims launched, by NodePool.",
	}, []string{"nodepool"})
	NodeClaimsRegistered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "registered_total",
		Help: "Number of NodeClaims registered, by NodePool.",
	}, []string{"nodepool"})
	NodeClaimsInitialized = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "initialized_total",
		Help: "Number of NodeClaims initialized, by NodePool.",
	}, []string{"nodepool"})
	// SchedulingDuration times one solve.
	SchedulingDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "provisioner", Name: "scheduling_duration_seconds",
		Help:    "Duration of a scheduling simulation, in seconds.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	}, []string{"controller"})
	// SchedulingQueueDepth is how many pods the last batch planned.
	SchedulingQueueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "provisioner", Name: "scheduling_queue_depth",
		Help: "Number of pending pods in the last scheduling batch.",
	}, []string{"controller"})
	// PodsState counts pods by phase, and whether they wait for capacity.
	// Karpenter labels one series per pod; at tens of thousands of pods that
	// is a cardinality problem, so we aggregate.
	PodsState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "pods", Name: "state",
		Help: "Number of pods by phase and scheduling state (bound, unschedulable, waiting-for-scheduler).",
	}, []string{"phase", "state"})
	// UnschedulablePods is the number of pods the last solve could not place.
	UnschedulablePods = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "provisioner", Name: "unschedulable_pods",
		Help: "Number of pending pods the last scheduling simulation could not place.",
	})
	// CloudProviderErrors counts failed provider calls by method and error.
	CloudProviderErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "cloudprovider", Name: "errors_total",
		Help: "Number of cloud provider errors, by method and error kind.",
	}, []string{"method", "error"})
)

func init() {
	crmetrics.Registry.MustRegister(NodeClaimsCreated, NodeClaimsTerminated, NodeClaimsLaunched,
		NodeClaimsRegistered, NodeClaimsInitialized, SchedulingDuration, SchedulingQueueDepth,
		PodsState, UnschedulablePods, CloudProviderErrors)
}

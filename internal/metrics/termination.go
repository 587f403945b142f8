package metrics

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// Node and drain metrics, under Karpenter's names and labels.
var (
	// PodsDrained counts pods evicted while draining a node, by the claim's
	// disruption reason ("Forceful Termination" when it has none).
	PodsDrained = newCounterVec(Spec{Name: "karpenter_pods_drained_total",
		Help: "Number of pods drained during node termination, by reason.", Labels: []string{labelReason}})
	// PodEvictionRequests counts Eviction API calls by HTTP status code.
	PodEvictionRequests = newCounterVec(Spec{Name: "karpenter_pods_eviction_requests_total",
		Help: "Number of pod eviction requests, by response code.", Labels: []string{"code"}})
	// NodesDrained counts nodes whose drain finished, by NodePool.
	NodesDrained = newCounterVec(Spec{Name: "karpenter_nodes_drained_total",
		Help: "Number of nodes drained, by NodePool.", Labels: []string{labelNodePool}})
	nodesCreated = newCounterVec(Spec{Name: "karpenter_nodes_created_total",
		Help: "Number of nodes created, by NodePool and zone.", Labels: []string{labelNodePool, labelZone}})
	nodesTerminated = newCounterVec(Spec{Name: "karpenter_nodes_terminated_total",
		Help: "Number of nodes terminated, by NodePool and zone.", Labels: []string{labelNodePool, labelZone}})
	nodeTerminationDuration = newSummaryVec(Spec{Name: "karpenter_nodes_termination_duration_seconds",
		Help: "Time from a node's deletion request to the removal of its finalizer, in seconds.", Labels: []string{labelNodePool}})
	nodeLifetimeDuration = newHistogramVec(Spec{Name: "karpenter_nodes_lifetime_duration_seconds",
		Help: "The lifetime of nodes from registration to termination, in seconds.", Labels: []string{labelNodePool}}, lifetimeBuckets())
)

// lifetimeBuckets run from a quarter hour to a month, as Karpenter's do.
func lifetimeBuckets() []float64 {
	var out []float64
	for _, h := range []float64{0.25, 0.5, 0.75, 1, 2, 4, 6, 8, 10, 12, 16, 20, 24, 48, 72, 120, 240, 360, 480, 600, 720} {
		out = append(out, h*3600)
	}
	return out
}

// NodeCreated counts the node of a NodeClaim that just registered.
func NodeCreated(nc *karpv1.NodeClaim) {
	nodesCreated.WithLabelValues(nc.Labels[karpv1.NodePoolLabelKey], nc.Labels[corev1.LabelTopologyZone]).Inc()
}

// NodeTerminated records the end of a NodeClaim's node at now, as the
// claim's finalizer is removed: the count, the time since the deletion
// request (Karpenter's node termination duration), and the node's lifetime.
func NodeTerminated(nc *karpv1.NodeClaim, now time.Time) {
	pool := nc.Labels[karpv1.NodePoolLabelKey]
	nodesTerminated.WithLabelValues(pool, nc.Labels[corev1.LabelTopologyZone]).Inc()
	if nc.DeletionTimestamp != nil {
		nodeTerminationDuration.WithLabelValues(pool).Observe(now.Sub(nc.DeletionTimestamp.Time).Seconds())
	}
	// The Registered condition turned True when the node joined: the
	// node's birth as far as the claim knows it.
	if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeRegistered); c != nil && c.Status == metav1.ConditionTrue {
		nodeLifetimeDuration.WithLabelValues(pool).Observe(now.Sub(c.LastTransitionTime.Time).Seconds())
	}
}

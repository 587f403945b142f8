// Package metrics defines nodewright's Prometheus metrics. The core ones keep
// Karpenter v1.14.1's names, types and label names, so dashboards and alerts
// written for Karpenter keep working; where nodewright means something else
// the metric is named nodewright_... instead. Every metric is declared from a
// Spec (Specs lists them all, docs/metrics.md documents them) and registered
// with controller-runtime's registry, which the manager serves on its metrics
// endpoint. Events are recorded by the controllers through the helpers here;
// state (nodes, NodePools, pods) is read from the cache at scrape time by
// the Collector, so a deleted object leaves no stale series behind.
package metrics

import (
	"runtime"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// namespace prefixes Karpenter's metric names.
const namespace = "karpenter"

// Label names shared by several metrics.
const (
	labelNodePool     = "nodepool"
	labelReason       = "reason"
	labelCapacityType = "capacity_type"
	labelZone         = "zone"
	labelController   = "controller"
	labelResourceType = "resource_type"
)

// ReasonProvisioned is the NodeClaims-created reason for capacity made for
// pending pods, as Karpenter names it.
const ReasonProvisioned = "provisioned"

var (
	// BuildInfo is 1, labelled by the build's version.
	BuildInfo = newGaugeVec(Spec{Name: "karpenter_build_info",
		Help:   "A metric with a constant '1' value labeled by version from which nodewright was built.",
		Labels: []string{"version", "goversion", "goarch", "commit"}})

	nodeClaimsCreated = newCounterVec(Spec{Name: "karpenter_nodeclaims_created_total",
		Help:   "Number of NodeClaims created, by reason, NodePool and whether minValues was relaxed.",
		Labels: []string{labelReason, labelNodePool, "min_values_relaxed"}})
	// NodeClaimsCreated counts NodeClaims created, by reason (ReasonProvisioned
	// or the lower-case disruption reason of a replacement) and NodePool.
	// nodewright never relaxes a NodePool's minValues, so that label is
	// always "false".
	NodeClaimsCreated = nodeClaimsCreated.MustCurryWith(prometheus.Labels{"min_values_relaxed": "false"})

	nodeClaimsTerminated = newCounterVec(Spec{Name: "karpenter_nodeclaims_terminated_total",
		Help:   "Number of NodeClaims terminated, by NodePool, capacity type and zone.",
		Labels: []string{labelNodePool, labelCapacityType, labelZone}})
	nodeClaimsDisrupted = newCounterVec(Spec{Name: "karpenter_nodeclaims_disrupted_total",
		Help:   "Number of NodeClaims disrupted, by reason, NodePool and capacity type.",
		Labels: []string{labelReason, labelNodePool, labelCapacityType}})
	nodeClaimsUnhealthyDisrupted = newCounterVec(Spec{Name: "karpenter_nodeclaims_unhealthy_disrupted_total",
		Help:   "Number of NodeClaims replaced by node repair, by the node condition that failed, NodePool, capacity type and image.",
		Labels: []string{"condition", labelNodePool, labelCapacityType, "image_id"}})
	nodeClaimTerminationDuration = newHistogramVec(Spec{Name: "karpenter_nodeclaims_termination_duration_seconds",
		Help: "Duration of NodeClaim termination in seconds.", Labels: []string{labelNodePool}}, durationBuckets())
	instanceTerminationDuration = newHistogramVec(Spec{Name: "karpenter_nodeclaims_instance_termination_duration_seconds",
		Help: "Duration of cloud provider instance termination in seconds.", Labels: []string{labelNodePool}}, durationBuckets())

	// NodeClaimsLaunched, Registered and Initialized count lifecycle steps.
	// Karpenter v1 replaced them with status-condition metrics; they are kept
	// because they cost nothing and older dashboards read them.
	NodeClaimsLaunched = newCounterVec(Spec{Name: "karpenter_nodeclaims_launched_total", Ours: true,
		Help: "Number of NodeClaims launched, by NodePool.", Labels: []string{labelNodePool}})
	NodeClaimsRegistered = newCounterVec(Spec{Name: "karpenter_nodeclaims_registered_total", Ours: true,
		Help: "Number of NodeClaims registered, by NodePool.", Labels: []string{labelNodePool}})
	NodeClaimsInitialized = newCounterVec(Spec{Name: "karpenter_nodeclaims_initialized_total", Ours: true,
		Help: "Number of NodeClaims initialized, by NodePool.", Labels: []string{labelNodePool}})

	// The balanced-consolidation metrics are registered in consolidation.go,
	// with the disruption planner's work; the table lists them so the docs
	// and the scrape test know of them.
	_ = declare(Spec{Name: "karpenter_consolidation_score", Type: Histogram, Owner: "consolidation.go",
		Help:   "Score of balanced consolidation moves, by decision (approved, rejected), NodePool and policy.",
		Labels: []string{"decision", labelNodePool, "policy"}})
	_ = declare(Spec{Name: "karpenter_consolidation_moves_total", Type: Counter, Owner: "consolidation.go",
		Help:   "Number of balanced consolidation moves, by decision (approved, rejected), NodePool and policy.",
		Labels: []string{"decision", labelNodePool, "policy"}})
)

func init() {
	BuildInfo.WithLabelValues(buildVersion()).Set(1)
}

// buildVersion reads the binary's own build information.
func buildVersion() (version, goversion, goarch, commit string) {
	version, goversion, goarch = "unknown", runtime.Version(), runtime.GOARCH
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				commit = s.Value
			}
		}
	}
	return version, goversion, goarch, commit
}

// NodeClaimDisrupted counts a NodeClaim nodewright deletes, voluntary
// disruption and involuntary paths (launch failure, instance gone) alike,
// with the reason written as Karpenter writes it: "Underutilized" becomes
// "underutilized", "InsufficientCapacity" "insufficient_capacity".
func NodeClaimDisrupted(reason string, nc *karpv1.NodeClaim) {
	nodeClaimsDisrupted.WithLabelValues(snake(reason), nc.Labels[karpv1.NodePoolLabelKey], nc.Labels[karpv1.CapacityTypeLabelKey]).Inc()
}

// NodeClaimRepaired records a NodeClaim deleted by node repair because its
// node's condition failed a repair policy.
func NodeClaimRepaired(condition string, nc *karpv1.NodeClaim) {
	nodeClaimsUnhealthyDisrupted.WithLabelValues(condition, nc.Labels[karpv1.NodePoolLabelKey], nc.Labels[karpv1.CapacityTypeLabelKey], nc.Status.ImageID).Inc()
}

// NodeClaimTerminated records a NodeClaim whose finalizer is removed at
// now, its instance gone: the count, the time since its deletion, and the
// time its instance took to go once the drain was over.
func NodeClaimTerminated(nc *karpv1.NodeClaim, now time.Time) {
	pool := nc.Labels[karpv1.NodePoolLabelKey]
	nodeClaimsTerminated.WithLabelValues(pool, nc.Labels[karpv1.CapacityTypeLabelKey], nc.Labels[corev1.LabelTopologyZone]).Inc()
	if nc.DeletionTimestamp != nil {
		nodeClaimTerminationDuration.WithLabelValues(pool).Observe(now.Sub(nc.DeletionTimestamp.Time).Seconds())
	}
	if start, ok := instanceTerminationStart(nc); ok && nc.Status.ProviderID != "" {
		instanceTerminationDuration.WithLabelValues(pool).Observe(now.Sub(start).Seconds())
	}
}

// instanceTerminationStart is when the instance could first be deleted: the
// later of the drain's and the volume detachment's last transitions. The
// conditions are the termination controller's (see package nodeclaim).
func instanceTerminationStart(nc *karpv1.NodeClaim) (time.Time, bool) {
	var start time.Time
	for _, t := range []string{"Drained", "VolumesDetached"} {
		c := meta.FindStatusCondition(nc.Status.Conditions, t)
		if c == nil {
			return time.Time{}, false
		}
		start = later(start, c.LastTransitionTime)
	}
	return start, true
}

func later(t time.Time, m metav1.Time) time.Time {
	if m.After(t) {
		return m.Time
	}
	return t
}

package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	// SchedulingDuration times one provisioning simulation, by controller.
	SchedulingDuration = newHistogramVec(Spec{Name: "karpenter_scheduler_scheduling_duration_seconds",
		Help:   "Duration of scheduling simulations used for provisioning, in seconds.",
		Labels: []string{labelController}}, durationBuckets())

	queueDepth = newGaugeVec(Spec{Name: "karpenter_scheduler_queue_depth",
		Help:   "Number of pending pods in the last scheduling batch, by controller.",
		Labels: []string{labelController, "scheduling_id"}})
	// SchedulingQueueDepth is the pods of the last batch, by controller.
	// Karpenter keeps one series per running simulation, keyed by its
	// scheduling_id; nodewright runs one at a time and keeps the last
	// batch's depth, so scheduling_id is empty.
	SchedulingQueueDepth = queueDepth.MustCurryWith(prometheus.Labels{"scheduling_id": ""})

	unschedulablePods = newGaugeVec(Spec{Name: "karpenter_scheduler_unschedulable_pods_count",
		Help:   "Number of pending pods the last scheduling simulation could not place, by controller.",
		Labels: []string{labelController}})
	// UnschedulablePods is the provisioner's count of pods its last
	// simulation could not place.
	UnschedulablePods = unschedulablePods.WithLabelValues("provisioner")

	// PodsState counts pods by phase and by whether they wait for capacity.
	// Karpenter's karpenter_pods_state is one series per pod, labelled by
	// name, owner, node and more; at tens of thousands of pods that is a
	// cardinality problem, so nodewright aggregates under its own name.
	PodsState = newGaugeVec(Spec{Name: "nodewright_pods_state", Ours: true,
		Help:   "Number of pods by phase and scheduling state (bound, unschedulable, waiting-for-scheduler).",
		Labels: []string{"phase", "state"}})
)

package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

const (
	labelDecision          = "decision"
	labelConsolidationType = "consolidation_type"
)

var (
	disruptionDecisions = newCounterVec(Spec{Name: "karpenter_voluntary_disruption_decisions_total",
		Help:   "Number of disruption decisions performed, by decision (delete, replace), reason and consolidation type.",
		Labels: []string{labelDecision, labelReason, labelConsolidationType}})
	disruptionDecisionsByNodePool = newCounterVec(Spec{Name: "karpenter_voluntary_disruption_decisions_by_nodepool_total",
		Help:   "Number of disruption decisions performed, by NodePool, decision, reason and consolidation type.",
		Labels: []string{labelNodePool, labelDecision, labelReason, labelConsolidationType}})
	disruptionEvaluationDuration = newHistogramVec(Spec{Name: "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
		Help:   "Duration of one disruption decision over the whole cluster, in seconds.",
		Labels: []string{labelReason, labelConsolidationType}}, durationBuckets())
	// DisruptionDecisionDuration times the planner. It decides every reason
	// in one pass, so its series has empty reason and consolidation_type
	// labels where Karpenter has one series per disruption method.
	DisruptionDecisionDuration prometheus.Observer = disruptionEvaluationDuration.WithLabelValues("", "")
	eligibleNodes                                  = newGaugeVec(Spec{Name: "karpenter_voluntary_disruption_eligible_nodes",
		Help: "Number of nodes eligible for disruption, by disruption reason.", Labels: []string{labelReason}})
	// AllowedDisruptions is what each NodePool's budgets allow now.
	AllowedDisruptions = newGaugeVec(Spec{Name: "karpenter_nodepools_allowed_disruptions",
		Help: "Number of nodes that may be disrupted now, by NodePool and reason.", Labels: []string{labelNodePool, labelReason}})
)

// ConsolidationType is Karpenter's consolidation_type label for a command:
// "empty" for empty nodes, "single" or "multi" for consolidation by how many
// nodes it takes, "" for drift and expiration.
func ConsolidationType(reason string, nodes int) string {
	switch karpv1.DisruptionReason(reason) {
	case karpv1.DisruptionReasonEmpty:
		return "empty"
	case karpv1.DisruptionReasonUnderutilized:
		if nodes > 1 {
			return "multi"
		}
		return "single"
	}
	return ""
}

// DisruptionDecision counts one disruption command: method "Delete" or
// "Replace", reason the disruption reason, pools the NodePools of its nodes.
func DisruptionDecision(method, reason string, pools []string) {
	decision, ctype := snake(method), ConsolidationType(reason, len(pools))
	disruptionDecisions.WithLabelValues(decision, snake(reason), ctype).Inc()
	seen := map[string]bool{}
	for _, p := range pools {
		if !seen[p] {
			seen[p] = true
			disruptionDecisionsByNodePool.WithLabelValues(p, decision, snake(reason), ctype).Inc()
		}
	}
}

// Eligibility counts disruption candidates by the reasons they could be
// disrupted for, as Karpenter's eligible_nodes does per disruption method.
type Eligibility struct {
	policies map[string]karpv1.ConsolidationPolicy
	counts   map[string]int
}

// NewEligibility starts a count over the candidates of pools.
func NewEligibility(pools []*karpv1.NodePool) Eligibility {
	e := Eligibility{policies: map[string]karpv1.ConsolidationPolicy{}, counts: map[string]int{}}
	for _, np := range pools {
		e.policies[np.Name] = np.Spec.Disruption.ConsolidationPolicy
	}
	return e
}

// Add counts one candidate of pool. drifted: its NodeClaim drifted; empty:
// no pod would have to move; blocked: something (a do-not-disrupt pod, a
// PodDisruptionBudget) keeps it whatever the reason.
func (e Eligibility) Add(pool string, drifted, empty, blocked bool) {
	if blocked {
		return
	}
	if drifted {
		e.counts[snake(string(karpv1.DisruptionReasonDrifted))]++
	}
	if empty {
		e.counts[snake(string(karpv1.DisruptionReasonEmpty))]++
	}
	if e.policies[pool] != karpv1.ConsolidationPolicyWhenEmpty {
		e.counts[snake(string(karpv1.DisruptionReasonUnderutilized))]++
	}
}

// Record sets karpenter_voluntary_disruption_eligible_nodes for every reason, zero where none is eligible, so
// a reason that had candidates last loop does not keep its old count.
func (e Eligibility) Record() {
	for _, r := range eligibleReasons() {
		eligibleNodes.WithLabelValues(r).Set(float64(e.counts[r]))
	}
}

func eligibleReasons() []string {
	return slices.Sorted(slices.Values([]string{
		snake(string(karpv1.DisruptionReasonDrifted)),
		snake(string(karpv1.DisruptionReasonEmpty)),
		snake(string(karpv1.DisruptionReasonUnderutilized)),
	}))
}

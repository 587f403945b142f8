package planner

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

const (
	// DisruptingAnnotation marks a NodeClaim that a command has chosen and
	// whose replacements are launching; its value is the reason. It makes
	// the choice survive a restart and counts the claim against budgets.
	DisruptingAnnotation = "nodewright.dev/disrupting"
	// ReplacementsAnnotation on a chosen NodeClaim lists its replacements'
	// names, comma separated.
	ReplacementsAnnotation = "nodewright.dev/replacements"
	// RepairConditionAnnotation on a NodeClaim chosen for node repair, beside
	// DisruptingAnnotation, names the node condition that failed, so that it
	// is counted when the claim is deleted once its replacements are up.
	RepairConditionAnnotation = "nodewright.dev/repair-condition"
	// DrainByAttritionAnnotation on a NodePool turns drain by attrition on
	// ("true").
	DrainByAttritionAnnotation = "nodewright.dev/drain-by-attrition"
	// AttritionMaxWaitAnnotation on a NodePool bounds how long a node drains
	// by attrition (a Go duration); after it, the node is deleted and its
	// terminationGracePeriod applies.
	AttritionMaxWaitAnnotation = "nodewright.dev/attrition-max-wait"
	// AttritionTaintKey keeps new pods off a node draining by attrition.
	AttritionTaintKey = "nodewright.dev/attrition"
)

// AttritionTaint is the taint of a node draining by attrition.
var AttritionTaint = corev1.Taint{Key: AttritionTaintKey, Effect: corev1.TaintEffectNoSchedule}

// attritionSettings reads a NodePool's attrition annotations.
func attritionSettings(np *karpv1.NodePool) (on bool, maxWait time.Duration, err error) {
	if np.Annotations[DrainByAttritionAnnotation] != "true" {
		return false, 0, nil
	}
	v, ok := np.Annotations[AttritionMaxWaitAnnotation]
	if !ok {
		return true, 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return true, 0, fmt.Errorf("NodePool %s: annotation %s=%q is not a positive Go duration such as \"30m\"; draining by attrition without a bound",
			np.Name, AttritionMaxWaitAnnotation, v)
	}
	return true, d, nil
}

// attritionSince is when a node's attrition taint was added, and whether it
// has one.
func attritionSince(n *corev1.Node) (time.Time, bool) {
	for _, t := range n.Spec.Taints {
		if t.Key == AttritionTaintKey {
			if t.TimeAdded != nil {
				return t.TimeAdded.Time, true
			}
			return time.Time{}, true
		}
	}
	return time.Time{}, false
}

// Replacing reads, from claims a replace command chose, the names of their
// replacements (recorded before the replacements are created).
func Replacing(claims []*karpv1.NodeClaim) map[string][]string {
	out := map[string][]string{}
	for _, nc := range claims {
		if nc.Annotations[DisruptingAnnotation] == "" {
			continue
		}
		var names []string
		for _, r := range strings.Split(nc.Annotations[ReplacementsAnnotation], ",") {
			if r != "" {
				names = append(names, r)
			}
		}
		out[nc.Name] = names
	}
	return out
}

package nodeclaim

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// consolidatable decides Karpenter's Consolidatable condition of a claim at
// now, given its NodePool's consolidateAfter (nil: Never). It returns the
// condition to set, or nil when the claim must not have one, and how long
// until the answer changes by itself (0: only on an event).
//
// As Karpenter's nodeclaim disruption controller: no condition when
// consolidation is off or the claim has not initialized, none until
// consolidateAfter has passed since the later of initialization and the
// last pod event, True (reason Consolidatable) from then on. Karpenter
// counts from the last pod event when there is one, else from
// initialization; the later of the two is the same except for pods that
// came before initialization, and it is what the disruption planner counts
// from, so that the condition says what disruption will do.
func consolidatable(nc *karpv1.NodeClaim, consolidateAfter *time.Duration, now time.Time) (*metav1.Condition, time.Duration) {
	if consolidateAfter == nil {
		return nil, 0
	}
	init := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
	if init == nil || init.Status != metav1.ConditionTrue {
		return nil, 0
	}
	since := init.LastTransitionTime.Time
	if nc.Status.LastPodEventTime.After(since) {
		since = nc.Status.LastPodEventTime.Time
	}
	if wait := since.Add(*consolidateAfter).Sub(now); wait > 0 {
		return nil, wait
	}
	return &metav1.Condition{Type: karpv1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue,
		Reason: karpv1.ConditionTypeConsolidatable, LastTransitionTime: metav1.NewTime(now)}, 0
}

// setOrRemove sets cond on the claim, or removes the condition of type typ
// when cond is nil, reporting whether the claim changed.
func setOrRemove(nc *karpv1.NodeClaim, typ string, cond *metav1.Condition) bool {
	if cond == nil {
		return meta.RemoveStatusCondition(&nc.Status.Conditions, typ)
	}
	c := *cond
	c.ObservedGeneration = nc.Generation
	return meta.SetStatusCondition(&nc.Status.Conditions, c)
}

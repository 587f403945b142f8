package simulate

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/budget"
	"github.com/nodewright/nodewright/internal/disruption/drift"
	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/disruption/protect"
)

// quietMax bounds how long the planner is skipped while nothing changes,
// as a safety net: wakeAfter knows every deadline the planner reads.
const quietMax = 30 * time.Minute

// wakeAfter is when the planner must run again if nothing changes: at once
// while commands or attrition are in progress, else at the earliest
// consolidateAfter, expiry, do-not-disrupt duration, budget window or
// rate limit change to come. Skipping the
// loops in between changes nothing, since the planner is a pure function
// of the cluster and the clock, and the clock only matters at these
// instants.
func (e *Engine) wakeAfter(plan *planner.Plan) time.Time {
	if len(plan.Commands) > 0 || len(plan.Attrition) > 0 {
		return e.now
	}
	wake := e.now.Add(quietMax)
	earlier := func(t time.Time) {
		if t.After(e.now) && t.Before(wake) {
			wake = t
		}
	}
	for _, nc := range e.claims {
		if nc.DeletionTimestamp != nil || nc.Annotations[planner.DisruptingAnnotation] != "" {
			return e.now
		}
		init := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
		if init == nil || init.Status != "True" {
			continue
		}
		if _, at := drift.Expired(nc, e.now); !at.IsZero() {
			earlier(at)
		}
		np := e.pool(nc.Labels[karpv1.NodePoolLabelKey])
		if np == nil || np.Spec.Disruption.ConsolidateAfter.Duration == nil {
			continue
		}
		last := init.LastTransitionTime.Time
		if nc.Status.LastPodEventTime.After(last) {
			last = nc.Status.LastPodEventTime.Time
		}
		earlier(last.Add(*np.Spec.Disruption.ConsolidateAfter.Duration))
	}
	for _, p := range e.pods {
		if _, ok := p.Annotations[karpv1.DoNotDisruptAnnotationKey]; ok && p.Spec.NodeName != "" {
			if _, until, _ := protect.DoNotDisrupt(p, e.now); !until.IsZero() {
				earlier(until)
			}
		}
	}
	starts := e.recentStarts()
	for _, np := range e.pools {
		if v, ok := np.Annotations[budget.DisruptionRateAnnotation]; ok {
			if r, err := budget.ParseRate(v); err == nil {
				earlier(r.At(starts[np.Name], e.now).Freed)
			}
		}
		for _, b := range np.Spec.Disruption.Budgets {
			if b.Schedule == nil {
				continue
			}
			if w, err := budget.WindowAt(b, e.now); err == nil {
				earlier(w.Change())
			}
		}
	}
	return wake
}

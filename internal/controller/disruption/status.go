package disruption

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/budget"
	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/snapshot"
)

const (
	// PreviewCondition on a NodeClaim says what the last disruption loop
	// decided for it and, when it keeps it, what holds it.
	PreviewCondition = "nodewright.dev/DisruptionPreview"
	// BudgetsCondition on a NodePool says how many nodes each disruption
	// reason may take now, and which budget binds.
	BudgetsCondition = "nodewright.dev/DisruptionBudgets"
)

// attrition puts the attrition taint on the plan's nodes and takes it off
// every other node.
func (c *Controller) attrition(ctx context.Context, plan *planner.Plan, cluster *snapshot.Cluster, now time.Time) {
	want := map[string]planner.Attrition{}
	for _, a := range plan.Attrition {
		want[a.Node] = a
	}
	// A node a command of this loop took has changed since the snapshot
	// (it was tainted, its claim deleted): its attrition taint goes with it.
	taken := map[string]bool{}
	for _, cmd := range plan.Commands {
		for _, n := range cmd.Nodes {
			taken[n] = true
		}
	}
	for _, n := range cluster.Nodes {
		if taken[n.Name] {
			continue
		}
		a, on := want[n.Name]
		had := false
		for _, t := range n.Spec.Taints {
			had = had || t.Key == planner.AttritionTaintKey
		}
		if on == had {
			continue
		}
		if err := setTaint(ctx, c.Client, n, planner.AttritionTaint, on, now); err != nil {
			// One node changed under us (kube-controller-manager or kwok
			// wrote it); the next loop sees it afresh. The others go on.
			log.FromContext(ctx).Info("cannot change the attrition taint; trying next loop", "node", n.Name, "error", err.Error())
			continue
		}
		if on {
			log.FromContext(ctx).Info("draining by attrition", "node", n.Name, "protectedPods", a.Protected)
			c.Recorder.Eventf(n, corev1.EventTypeNormal, "DrainingByAttrition",
				"No new pods: the node goes when its do-not-disrupt pods end (%s)", strings.Join(a.Protected, ", "))
		} else {
			c.Recorder.Eventf(n, corev1.EventTypeNormal, "AttritionStopped", "The node takes pods again")
		}
	}
}

// publish writes the preview condition on every candidate claim whose
// verdict changed, the Drifted condition, and each NodePool's budgets.
func (c *Controller) publish(ctx context.Context, plan *planner.Plan, cluster *snapshot.Cluster, idx index, now time.Time) {
	claims := idx.claims
	eligible := metrics.NewEligibility(cluster.NodePools)
	for _, cand := range plan.Candidates {
		nc := claims[cand.Claim]
		if nc == nil {
			continue
		}
		eligible.Add(cand.NodePool, cand.Drift != "", cand.Pods == 0, len(cand.Blockers) > 0)
		preview := previewCondition(cand, now)
		driftCond := driftCondition(cand, now)
		if !driftChanged(nc, driftCond) && (!previewDue(nc.Status.Conditions, preview, c.previewWritten(nc.Name), now) || passing(nc.Status.Conditions, cand)) {
			continue
		}
		before := nc.DeepCopy()
		after := nc.DeepCopy()
		meta.SetStatusCondition(&after.Status.Conditions, preview)
		if driftCond != nil {
			meta.SetStatusCondition(&after.Status.Conditions, *driftCond)
		} else {
			meta.RemoveStatusCondition(&after.Status.Conditions, karpv1.ConditionTypeDrifted)
		}
		// With a lock: a merge patch replaces the whole conditions list, and
		// the NodeClaim controller writes conditions of its own
		// (Consolidatable, ConsistentStateFound) that a stale copy would drop.
		if err := c.Client.Status().Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			log.FromContext(ctx).V(1).Info("cannot write the disruption preview", "nodeclaim", nc.Name, "error", err.Error())
			continue
		}
		c.wrotePreview(nc.Name, now)
		if preview.Status == metav1.ConditionFalse && blocked(cand) {
			c.Recorder.Eventf(nc, corev1.EventTypeNormal, "DisruptionBlocked", "%s", preview.Message)
		}
	}
	c.forgetPreviews(claims)
	eligible.Record()
	for _, np := range cluster.NodePools {
		res, ok := plan.Budgets[np.Name]
		if !ok {
			continue
		}
		for _, r := range budget.Reasons() {
			metrics.AllowedDisruptions.WithLabelValues(np.Name, string(r)).Set(float64(res.Allowed(r)))
		}
		cond := budgetsCondition(res, plan.BudgetErrors[np.Name], now)
		// The generation this loop judged, drift included: a user (or a
		// test) can tell when a NodePool edit has been looked at.
		cond.ObservedGeneration = np.Generation
		repair := repairCondition(plan.RepairBlocked[np.Name], np.Generation, now)
		if !conditionChanged(np.Status.Conditions, cond) && !conditionChanged(np.Status.Conditions, repair) {
			continue
		}
		before := np.DeepCopy()
		after := np.DeepCopy()
		meta.SetStatusCondition(&after.Status.Conditions, cond)
		meta.SetStatusCondition(&after.Status.Conditions, repair)
		if err := c.Client.Status().Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			log.FromContext(ctx).V(1).Info("cannot write the budgets condition", "nodepool", np.Name, "error", err.Error())
		}
		if err := plan.BudgetErrors[np.Name]; err != nil {
			c.Recorder.Eventf(np, corev1.EventTypeWarning, "InvalidDisruptionBudget", "%v", err)
		}
	}
}

// passing reports whether the verdict on a claim that has no preview yet is
// one its next loops will replace: the node was just initialized and all
// that holds it is the pending pods nominated to it, which kube-scheduler
// binds within seconds. Written, it was a status write and an event on
// every NodeClaim of a scale-up, each followed a loop or two later by the
// lasting verdict; now the lasting verdict is the first one written.
func passing(conds []metav1.Condition, c planner.Candidate) bool {
	return meta.FindStatusCondition(conds, PreviewCondition) == nil &&
		c.State == "Kept" && c.Nominated > 0 && len(c.Blockers) == 1
}

// blocked reports whether something other than its NodePool's own policy
// keeps the candidate: that is what a DisruptionBlocked event is for. A
// NodePool set never to consolidate (consolidateAfter: Never, static) keeps
// its nodes as asked; an event on each of them, one per NodeClaim of every
// scale-up, would tell the user nothing the NodePool does not say. The
// preview condition still says it.
func blocked(c planner.Candidate) bool {
	for _, b := range c.Blockers {
		if b != c.Policy {
			return true
		}
	}
	return false
}

// PreviewRefresh is how often the preview condition, and its
// DisruptionBlocked event, is written again when only the numbers in its
// message changed: the verdict and what holds the node stand, and a count
// moved ("22 pending pods are nominated to it", as kube-scheduler binds
// them) or a time did (when consolidateAfter passes, as pods come and go).
// Written on every loop, that was a status write and an event per starting
// NodeClaim every 10 seconds of a scale-up.
const PreviewRefresh = time.Minute

// previewDue reports whether the preview condition want must be written
// over conds: at once when there is none, or its status, reason, observed
// generation or the words of its message changed; when only the numbers in
// the message changed, once PreviewRefresh has passed since this process
// last wrote it (lastWrite; zero when it has not).
func previewDue(conds []metav1.Condition, want metav1.Condition, lastWrite, now time.Time) bool {
	cur := meta.FindStatusCondition(conds, want.Type)
	switch {
	case cur == nil || cur.Status != want.Status || cur.Reason != want.Reason || cur.ObservedGeneration != want.ObservedGeneration:
		return true
	case cur.Message == want.Message:
		return false
	case withoutNumbers(cur.Message) != withoutNumbers(want.Message):
		return true
	default:
		return now.Sub(lastWrite) >= PreviewRefresh
	}
}

// withoutNumbers is s with each run of digits replaced by "#".
func withoutNumbers(s string) string {
	var b strings.Builder
	digits := false
	for _, r := range s {
		if r >= '0' && r <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(r)
	}
	return b.String()
}

func (c *Controller) previewWritten(claim string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.previews[claim]
}

func (c *Controller) wrotePreview(claim string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.previews == nil {
		c.previews = map[string]time.Time{}
	}
	c.previews[claim] = now
}

// forgetPreviews drops the write times of claims that are gone.
func (c *Controller) forgetPreviews(claims map[string]*karpv1.NodeClaim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.previews {
		if claims[name] == nil {
			delete(c.previews, name)
		}
	}
}

func previewCondition(c planner.Candidate, now time.Time) metav1.Condition {
	cond := metav1.Condition{Type: PreviewCondition, LastTransitionTime: metav1.NewTime(now)}
	switch {
	case c.State == "Disrupting":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "Disrupting", "chosen by the last disruption loop"
	case c.State == "Validating":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "Validating", strings.Join(c.Blockers, "; ")
	case c.State == "Attrition":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "DrainingByAttrition", strings.Join(c.Blockers, "; ")
	case len(c.Blockers) > 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Blocked", strings.Join(c.Blockers, "; ")
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "NotNeeded", "nothing calls for disrupting it"
	}
	return cond
}

func driftCondition(c planner.Candidate, now time.Time) *metav1.Condition {
	if c.Drift == "" {
		return nil
	}
	reason, msg, _ := strings.Cut(c.Drift, ": ")
	return &metav1.Condition{Type: karpv1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(now)}
}

func driftChanged(nc *karpv1.NodeClaim, want *metav1.Condition) bool {
	if want == nil {
		return meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted) != nil
	}
	return conditionChanged(nc.Status.Conditions, *want)
}

// budgetsCondition reads "Empty: 1, Underutilized: 1, Drifted: 0 allowed",
// then what binds each reason.
func budgetsCondition(res budget.Result, err error, now time.Time) metav1.Condition {
	var counts, why []string
	for _, r := range budget.Reasons() {
		a := res.Allowances[r]
		counts = append(counts, fmt.Sprintf("%s: %d", r, a.Allowed))
		if a.Message != "" {
			why = append(why, fmt.Sprintf("%s: %s", r, a.Message))
		}
	}
	sort.Strings(why)
	cond := metav1.Condition{Type: BudgetsCondition, Status: metav1.ConditionTrue, Reason: "Evaluated",
		Message: "allowed disruptions: " + strings.Join(counts, ", ") + ". " + strings.Join(why, "; "), LastTransitionTime: metav1.NewTime(now)}
	if err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, "InvalidBudget"
		cond.Message = err.Error() + ". " + cond.Message
	}
	return cond
}

// ConditionNodeRepairAllowed is nodewright's NodePool condition for node
// repair: False while more than 20% of the NodePool's nodes are unhealthy,
// which holds every repair back.
const ConditionNodeRepairAllowed = "NodeRepairAllowed"

func repairCondition(blocked string, gen int64, now time.Time) metav1.Condition {
	c := metav1.Condition{Type: ConditionNodeRepairAllowed, Status: metav1.ConditionTrue, Reason: "NodeRepairAllowed",
		ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(now)}
	if blocked != "" {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "TooManyUnhealthyNodes", blocked
	}
	return c
}

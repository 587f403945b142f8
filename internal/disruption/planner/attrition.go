package planner

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/protect"
	"github.com/nodewright/nodewright/internal/solver"
	"github.com/nodewright/nodewright/internal/static"
)

// onlyPodsProtect reports whether the only things holding a node are
// do-not-disrupt pods: the case drain by attrition is for.
func onlyPodsProtect(v protect.Verdict) ([]string, bool) {
	var pods []string
	for _, b := range v.Blockers {
		if b.Kind != protect.KindDoNotDisrupt || b.Pod == "" {
			return nil, false
		}
		pods = append(pods, b.Pod)
	}
	return pods, len(pods) > 0
}

// attrition picks the nodes of NodePools with drain by attrition on that
// consolidation would delete but for do-not-disrupt pods, when the rest of
// the fleet, draining nodes included, can hold all their pods and an open
// node keeps room for one more like them: they get the attrition taint, so
// new pods go elsewhere and they empty as their jobs end. The emptiest are
// judged first, so the fullest stay open and take the new pods (of nodes as
// full, the one whose newest pod started last). A node already
// draining keeps draining while it has protected pods (the provisioner
// takes it back when pods would otherwise need a new node); once its
// protection has lapsed it is deleted at once, without waiting for
// consolidateAfter; one that drained longer than the NodePool's maximum
// wait is deleted, and its terminationGracePeriod bounds the rest. Nodes
// already draining are looked at first.
func (p *planning) attrition() {
	var cs []*candidate
	for _, c := range p.live() {
		if static.Is(c.pool) {
			continue // never consolidated, so never drained by attrition either
		}
		on, _, err := attritionSettings(c.pool)
		if err != nil {
			block(c, err.Error())
		}
		if on || c.attrited {
			cs = append(cs, c)
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].attrited != cs[j].attrited {
			return cs[i].attrited
		}
		if len(cs[i].pods) != len(cs[j].pods) {
			return len(cs[i].pods) < len(cs[j].pods)
		}
		// Of nodes as full, the one whose newest job began last stays
		// open: that job holds it longest, so the next one added there
		// lengthens its stay least.
		return newestStart(cs[i].pods).Before(newestStart(cs[j].pods))
	})
	for _, c := range cs {
		on, maxWait, _ := attritionSettings(c.pool)
		if !on {
			continue // the taint comes off: attrition was turned off
		}
		protected, only := onlyPodsProtect(c.verdict)
		if c.attrited && !c.verdict.Blocked() {
			p.attritionDone(c)
			continue
		}
		if !only {
			continue
		}
		if c.attrited {
			// Its protected pods end where they are; the node keeps draining
			// unless the provisioner takes it back for pods that would
			// otherwise need a new node.
			if maxWait > 0 && !c.since.IsZero() && p.in.Now.Sub(c.since) >= maxWait && p.attritionExpired(c, maxWait) {
				continue
			}
			p.keepDraining(c, protected)
			continue
		}
		if d := c.pool.Spec.Disruption; d.ConsolidateAfter.Duration == nil || d.ConsolidationPolicy == karpv1.ConsolidationPolicyWhenEmpty {
			continue
		}
		if !c.attrited && c.idleFor < *c.pool.Spec.Disruption.ConsolidateAfter.Duration && p.in.Now.Sub(initializedAt(c)) < *c.pool.Spec.Disruption.ConsolidateAfter.Duration {
			continue
		}
		// Surplus: its pods would fit on the rest of the fleet, counting
		// the room of nodes already draining, which the provisioner opens
		// again when pods need it. Counting only the open nodes left the
		// fleet, under kube-scheduler's spreading, with many half-full
		// open nodes, each refreshed by a new job now and then, so none
		// ever emptied.
		if sim := p.simulateOpening(p.attriting, c); !sim.ok() || len(sim.plan.NewClaims) > 0 {
			continue
		}
		// Room stays: without it an open node still takes one more pod
		// like its largest, so the next one does not wait for the
		// provisioner. The fullest nodes, judged last, are the ones that
		// stay open, and new pods fill them rather than the emptiest.
		if !p.roomStaysWithout(c) {
			continue
		}
		p.keepDraining(c, protected)
	}
}

// roomStaysWithout reports whether, with c and the nodes already closed
// taking no new pods, an existing node would still take a copy of c's
// largest pod, after the pods of draining and removed nodes.
func (p *planning) roomStaysWithout(c *candidate) bool {
	var largest *corev1.Pod
	var size room
	for _, pod := range c.pods {
		if r := podRoom(p.base.Requests, pod); largest == nil || r.cpu > size.cpu || r.cpu == size.cpu && r.mem > size.mem {
			largest, size = pod, r
		}
	}
	if largest == nil {
		return true
	}
	probe := largest.DeepCopy()
	probe.UID = types.UID(string(largest.UID) + "-probe")
	probe.Name += "-probe"
	in, _ := p.simInput(nil, nil)
	for i := range in.Nodes {
		if p.claimOf[in.Nodes[i].Name] == c.claim.Name {
			in.Nodes[i].Deleting = true
		}
	}
	in.Pods = append(in.Pods, probe)
	unbind(in.Pods)
	p.solves++
	plan, err := solver.Solve(&in)
	if err != nil {
		return false
	}
	for _, pl := range plan.Placements {
		if pl.Pod.UID == probe.UID {
			return pl.NewClaim < 0
		}
	}
	return false
}

// keepDraining puts c among the nodes draining by attrition; the next
// nodes are judged without it.
func (p *planning) keepDraining(c *candidate, protected []string) {
	p.closed[c.claim.Name] = true
	p.attriting[c.claim.Name] = true
	c.view.State = "Attrition"
	c.view.Blockers = append([]string{"draining by attrition: no new pods; removed when its protected pods end"}, c.view.Blockers...)
	p.plan.Attrition = append(p.plan.Attrition, Attrition{Claim: c.claim.Name, Node: c.node.Name, NodePool: c.pool.Name, Protected: protected})
}

// attritionExpired deletes a node that drained by attrition for the
// NodePool's maximum wait, budget permitting, and reports whether it did.
func (p *planning) attritionExpired(c *candidate, maxWait time.Duration) bool {
	if n, why := p.allowed(c.pool, karpv1.DisruptionReasonUnderutilized); n < 1 {
		block(c, "Underutilized budget: "+why)
		return false
	}
	p.take(Command{Reason: karpv1.DisruptionReasonUnderutilized, Method: Delete,
		Message: fmt.Sprintf("drained by attrition for %s, the NodePool's maximum; terminationGracePeriod applies to its protected pods", maxWait)},
		[]*candidate{c})
	return true
}

// attritionDone deletes a node that drained by attrition and has nothing
// left that holds it, within the budget of the reason it now has.
func (p *planning) attritionDone(c *candidate) {
	reason := karpv1.DisruptionReasonUnderutilized
	if len(c.pods) == 0 {
		reason = karpv1.DisruptionReasonEmpty
	}
	if len(c.pods) > 0 {
		if sim := p.simulate(c); !sim.ok() || len(sim.plan.NewClaims) > 0 {
			block(c, "drained by attrition, but its remaining pods would not fit elsewhere")
			return
		}
	}
	if n, why := p.allowed(c.pool, reason); n < 1 {
		block(c, string(reason)+" budget: "+why)
		return
	}
	p.take(Command{Reason: reason, Method: Delete, Message: "drained by attrition: its last protected pod ended"}, []*candidate{c})
}

func initializedAt(c *candidate) time.Time {
	for _, cond := range c.claim.Status.Conditions {
		if cond.Type == karpv1.ConditionTypeInitialized {
			return cond.LastTransitionTime.Time
		}
	}
	return c.created
}

// newestStart is when the most recently started of pods began, its
// creation if it has not started. A job of bounded length that began later
// tends to end later, so of two nodes with as many jobs, the one whose
// newest job began last is likely held longest whatever is added to it.
// This is a tie-break, not a forecast: it only orders nodes that count
// the same.
func newestStart(pods []*corev1.Pod) time.Time {
	var newest time.Time
	for _, pod := range pods {
		at := pod.CreationTimestamp.Time
		if pod.Status.StartTime != nil {
			at = pod.Status.StartTime.Time
		}
		if at.After(newest) {
			newest = at
		}
	}
	return newest
}

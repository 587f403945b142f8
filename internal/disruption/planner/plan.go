package planner

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/budget"
	"github.com/nodewright/nodewright/internal/disruption/protect"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
	"github.com/nodewright/nodewright/internal/static"
)

// planning is the state of one decision.
type planning struct {
	in      Input
	pdbs    *protect.PDBs
	base    *solver.Input
	claimOf map[string]string // solver node name -> NodeClaim name
	cands   []*candidate
	total   map[string]int
	// disrupting counts per NodePool and reason the nodes being disrupted,
	// this plan's commands included.
	disrupting map[string]map[Reason]int
	// removed holds the claims this plan's commands take away.
	removed map[string]bool
	// closed holds the claims draining by attrition: they take no new pods,
	// and their pods end where they are, so no simulation moves them.
	closed map[string]bool
	// attriting holds the claims of closed that drain by attrition.
	attriting map[string]bool
	// receiving holds the nodes (by name) that this plan's commands move
	// pods to; they stay, whatever a later phase would make of them.
	receiving map[string]bool
	plan      *Plan
	solves    int
	// draining are the pods draining nodes will evict, as pending copies:
	// every simulation places them first, so that no command takes the
	// room they are about to need.
	draining []*corev1.Pod
	free     map[string]room // per node, cpu and memory left
	// totals caches poolTotals.
	totals map[string]share
}

// Decide plans one disruption loop. It never fails: parts it cannot read
// (a budget, a PDB selector) are reported and treated as blocking.
func Decide(in Input) *Plan {
	p := &planning{in: in, total: map[string]int{}, disrupting: map[string]map[Reason]int{},
		removed: map[string]bool{}, closed: map[string]bool{}, attriting: map[string]bool{}, receiving: map[string]bool{}, plan: &Plan{Budgets: map[string]budget.Result{}, BudgetErrors: map[string]error{}, RepairBlocked: map[string]string{}}}
	if p.in.Options.MultiNodeMax <= 0 {
		p.in.Options.MultiNodeMax = DefaultOptions().MultiNodeMax
	}
	for _, np := range in.Cluster.NodePools {
		p.disrupting[np.Name] = map[Reason]int{}
	}
	p.pdbs, _ = protect.IndexPDBs(in.PDBs, in.Cluster.Pods)
	for _, nc := range in.Cluster.NodeClaims {
		if p.disrupting[nc.Labels[karpv1.NodePoolLabelKey]] == nil {
			p.disrupting[nc.Labels[karpv1.NodePoolLabelKey]] = map[Reason]int{}
		}
	}
	res := snapshot.Build(in.Cluster, in.PoolTypes, snapshot.Options{Now: in.Now, NominationGrace: in.Options.NominationGrace, MoveDraining: true, Policies: in.Options.Policies})
	p.base, p.claimOf = res.Input, res.ClaimOf
	// Every simulation of this loop solves over the same pods: each is
	// summed once.
	p.base.Requests = in.Requests
	if p.base.Requests == nil {
		p.base.Requests = solver.NewRequests()
	}
	p.candidates(res.Draining)
	p.free = freeRoom(in.Cluster, p.base.Requests)
	for _, pod := range res.Input.Pods {
		if _, ok := res.Draining[pod.UID]; ok {
			p.draining = append(p.draining, pod)
		}
	}

	p.reserveReplacements()
	p.repair()
	p.expire()
	p.driftOut()
	p.empty()
	if !p.multiNode() {
		p.singleNode()
	}
	p.attrition()

	for _, np := range in.Cluster.NodePools {
		r, err := p.budgets(np)
		p.plan.Budgets[np.Name] = r
		if err != nil {
			p.plan.BudgetErrors[np.Name] = err
		}
	}
	for _, c := range p.cands {
		p.plan.Candidates = append(p.plan.Candidates, *c.view)
	}
	p.plan.Simulations = p.solves
	return p.plan
}

// budgets evaluates a NodePool's budgets with the disruptions counted so far.
func (p *planning) budgets(np *karpv1.NodePool) (budget.Result, error) {
	// The NodePool's record of starts is read here too, so that explain,
	// which has no memory of its own, counts them as the controller does.
	started := budget.SortedStarts(append(budget.DecodeStarts(np.Annotations[budget.StartsAnnotation]), p.in.Started[np.Name]...))
	return budget.Evaluate(budget.Input{NodePool: np, Total: p.total[np.Name],
		Disrupting: p.disrupting[np.Name], Started: started}, p.in.Now)
}

// allowed is how many more of np's nodes may go for reason now.
func (p *planning) allowed(np *karpv1.NodePool, reason Reason) (int, string) {
	r, _ := p.budgets(np)
	a := r.Allowances[reason]
	return a.Allowed, a.Message
}

// take records a command and marks its nodes removed.
func (p *planning) take(cmd Command, cs []*candidate) {
	for _, c := range cs {
		cmd.Claims = append(cmd.Claims, c.claim.Name)
		cmd.Nodes = append(cmd.Nodes, c.node.Name)
		cmd.Pools = append(cmd.Pools, c.pool.Name)
		p.removed[c.claim.Name] = true
		p.disrupting[c.pool.Name][cmd.Reason]++
		c.view.State = "Disrupting"
		c.view.Blockers = nil
	}
	for _, n := range cmd.receivers {
		p.receiving[n] = true
	}
	p.plan.Commands = append(p.plan.Commands, cmd)
}

// live are the candidates no command of this plan has taken yet.
func (p *planning) live() []*candidate {
	var out []*candidate
	for _, c := range p.cands {
		switch {
		case p.removed[c.claim.Name] || p.closed[c.claim.Name]:
		case p.receiving[c.node.Name]:
			block(c, "receives the pods of a node disrupted in the same loop")
		default:
			out = append(out, c)
		}
	}
	return out
}

// block adds a reason, once, to a candidate's view.
func block(c *candidate, why string) {
	for _, b := range c.view.Blockers {
		if b == why {
			return
		}
	}
	c.view.Blockers = append(c.view.Blockers, why)
}

// expire deletes every expired node: expiration is forceful and no budget
// or do-not-disrupt pod holds it (terminationGracePeriod bounds the drain).
func (p *planning) expire() {
	for _, c := range p.live() {
		if !c.expired {
			continue
		}
		p.take(Command{Reason: ReasonExpired, Method: Delete,
			Message: fmt.Sprintf("expired after %s", c.claim.Spec.ExpireAfter)}, []*candidate{c})
	}
}

// driftOut replaces drifted nodes, oldest first, within the Drifted budget.
// A node held by do-not-disrupt pods or PDBs is replaced anyway when its
// NodeClaim has a terminationGracePeriod, which bounds the drain.
func (p *planning) driftOut() {
	var drifted []*candidate
	for _, c := range p.live() {
		if c.drifted {
			drifted = append(drifted, c)
		}
	}
	sort.SliceStable(drifted, func(i, j int) bool { return drifted[i].created.Before(drifted[j].created) })
	for _, c := range drifted {
		if c.verdict.Blocked() && c.claim.Spec.TerminationGracePeriod == nil {
			continue
		}
		if n, why := p.allowed(c.pool, karpv1.DisruptionReasonDrifted); n < 1 {
			block(c, "Drifted budget: "+why)
			continue
		}
		if static.Is(c.pool) {
			p.replaceStatic(c)
			continue
		}
		sim := p.simulate(c)
		if !sim.ok() {
			block(c, "drifted, but its pods would not all schedule elsewhere: "+describeUnschedulable(sim))
			continue
		}
		method := Delete
		if len(sim.plan.NewClaims) > 0 {
			method = Replace
		}
		p.take(Command{Reason: karpv1.DisruptionReasonDrifted, Method: method, Replacements: sim.plan.NewClaims,
			Message: c.drift.String(), receivers: sim.receivers}, []*candidate{c})
	}
}

// replaceStatic replaces a drifted node of a static NodePool by one fresh
// replica, launched first: the pool keeps its count, and the pods it held
// find room on the replacement or wherever the scheduler puts them.
func (p *planning) replaceStatic(c *candidate) {
	pool, err := snapshot.SolverPool(c.pool, p.in.PoolTypes, nil)
	var r *solver.NewClaim
	if err == nil {
		r, err = static.NewClaim(pool, p.base.DaemonSets)
	}
	if err != nil {
		block(c, "drifted, but no replacement can launch: "+err.Error())
		return
	}
	p.take(Command{Reason: karpv1.DisruptionReasonDrifted, Method: Replace, Replacements: []*solver.NewClaim{r},
		Message: c.drift.String()}, []*candidate{c})
}

// policyOff is why np never consolidates its nodes, "" when it may.
func policyOff(np *karpv1.NodePool) string {
	switch {
	case static.Is(np):
		return "NodePool " + np.Name + " is static (spec.replicas): its nodes are never consolidated"
	case np.Spec.Disruption.ConsolidateAfter.Duration == nil:
		return "NodePool " + np.Name + " has consolidateAfter: Never"
	}
	return ""
}

// consolidatable reports whether a candidate may be consolidated by its
// NodePool's policy now, with the reason it may not.
func consolidatable(c *candidate, underutilized bool, now time.Time) (bool, string) {
	d := c.pool.Spec.Disruption
	if why := policyOff(c.pool); why != "" {
		return false, why
	}
	if underutilized && d.ConsolidationPolicy == karpv1.ConsolidationPolicyWhenEmpty {
		return false, ""
	}
	if c.idleFor < *d.ConsolidateAfter.Duration {
		// An instant rather than a countdown, so the message changes only
		// when a pod comes or goes.
		at := now.Add(*d.ConsolidateAfter.Duration - c.idleFor).UTC().Truncate(time.Second)
		return false, fmt.Sprintf("consolidateAfter: %s after the last pod event, at %s", *d.ConsolidateAfter.Duration, at.Format(time.RFC3339))
	}
	return true, ""
}

// empty deletes nodes without pods to move, within the Empty budget.
func (p *planning) empty() {
	byPool := map[string][]*candidate{}
	var pools []string
	for _, c := range p.live() {
		if len(c.pods) > 0 || c.held {
			continue
		}
		ok, why := consolidatable(c, false, p.in.Now)
		if !ok && !c.attrited {
			if why != "" {
				block(c, why)
			}
			continue
		}
		if byPool[c.pool.Name] == nil {
			pools = append(pools, c.pool.Name)
		}
		byPool[c.pool.Name] = append(byPool[c.pool.Name], c)
	}
	for _, name := range pools {
		var take []*candidate
		for _, c := range byPool[name] {
			if n, why := p.allowed(c.pool, karpv1.DisruptionReasonEmpty); n < 1+len(take) {
				block(c, "Empty budget: "+why)
				// Its validation runs meanwhile: once the budget allows,
				// a node that stayed empty goes at once.
				p.plan.HeldByBudget = append(p.plan.HeldByBudget, Command{Reason: karpv1.DisruptionReasonEmpty, Method: Delete,
					Consolidation: true, Claims: []string{c.claim.Name}, Nodes: []string{c.node.Name}, Pools: []string{c.pool.Name}})
				continue
			}
			take = append(take, c)
		}
		if len(take) > 0 {
			p.take(Command{Reason: karpv1.DisruptionReasonEmpty, Method: Delete, Message: "empty", Consolidation: true}, take)
		}
	}
}

func describeUnschedulable(s simulation) string {
	if s.err != nil {
		return s.err.Error()
	}
	if len(s.unschedulable) == 0 {
		return ""
	}
	u := s.unschedulable[0]
	msg := u.Pod.Namespace + "/" + u.Pod.Name
	if u.Reason != nil {
		msg += ": " + u.Reason.String()
	}
	if len(s.unschedulable) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(s.unschedulable)-1)
	}
	return msg
}

// reserveReplacements closes the replacements of commands still under way:
// their room is for the pods of the nodes they replace, which move there
// only when those drain. Without this a replacement that had initialized
// looked empty, and consolidation filled it or deleted it, so the drained
// pods needed new nodes again.
func (p *planning) reserveReplacements() {
	byClaim := map[string]*candidate{}
	for _, c := range p.cands {
		byClaim[c.claim.Name] = c
	}
	for _, nc := range p.in.Cluster.NodeClaims {
		for _, r := range strings.Split(nc.Annotations[ReplacementsAnnotation], ",") {
			if r == "" {
				continue
			}
			p.closed[r] = true
			if c := byClaim[r]; c != nil {
				c.held = true
				block(c, "replacement for "+nc.Name+": its room is kept for that node's pods")
			}
		}
	}
}

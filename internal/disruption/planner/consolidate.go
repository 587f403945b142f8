package planner

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/protect"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/solver"
)

// underutilized are the candidates consolidation may take now, cheapest to
// disrupt first; the others get their reason.
func (p *planning) underutilized() []*candidate {
	var out []*candidate
	for _, c := range p.live() {
		if len(c.pods) == 0 || c.held || c.attrited {
			continue
		}
		if ok, why := consolidatable(c, true, p.in.Now); !ok {
			if why != "" {
				block(c, why)
			}
			continue
		}
		out = append(out, c)
	}
	disruptionCost(out)
	return out
}

// withinBudget keeps the candidates the Underutilized budgets allow, in
// order, each NodePool counted on its own.
func (p *planning) withinBudget(cs []*candidate) []*candidate {
	used := map[string]int{}
	var out []*candidate
	for _, c := range cs {
		n, why := p.allowed(c.pool, karpv1.DisruptionReasonUnderutilized)
		if n < used[c.pool.Name]+1 {
			block(c, "Underutilized budget: "+why)
			continue
		}
		used[c.pool.Name]++
		out = append(out, c)
	}
	return out
}

// consolidation tries to remove cs at once: every pod must find a place,
// with no new node (delete) or one new node cheaper than all of cs
// (replace). It returns the command, or why not.
func (p *planning) consolidation(cs []*candidate) (Command, bool, string) {
	if len(cs) > 1 {
		var pc []protect.Candidate
		for _, c := range cs {
			pc = append(pc, protect.Candidate{Node: c.node, Claim: c.claim, Pods: c.all})
		}
		if v := protect.CheckTogether(pc, p.pdbs, p.in.Now); v.Blocked() {
			return Command{}, false, v.Blockers[0].Message
		}
	}
	sim := p.simulate(cs...)
	if !sim.ok() {
		return Command{}, false, "its pods would not all schedule elsewhere: " + describeUnschedulable(sim)
	}
	price, spot := 0.0, false
	for _, c := range cs {
		price += c.price
		spot = spot || c.spot
	}
	switch len(sim.plan.NewClaims) {
	case 0:
		return p.balanced(Command{Reason: karpv1.DisruptionReasonUnderutilized, Method: Delete, Consolidation: true, Savings: price, receivers: sim.receivers,
			Message: fmt.Sprintf("its pods fit on other nodes; saves $%.4f/h", price)}, cs)
	case 1:
	default:
		return Command{}, false, fmt.Sprintf("moving its pods would need %d new nodes", len(sim.plan.NewClaims))
	}
	if price <= 0 {
		return Command{}, false, "its price is unknown, so no replacement can be shown to be cheaper"
	}
	if spot && !p.in.Options.SpotToSpot {
		return Command{}, false, "a spot node is only deleted, never replaced (spot-to-spot consolidation is off)"
	}
	nc, ok := cheaper(sim.plan.NewClaims[0], price)
	if !ok {
		return Command{}, false, fmt.Sprintf("no replacement is cheaper than $%.4f/h", price)
	}
	if spot {
		var why string
		if nc, why = p.spotFlexibility(cs, nc); why != "" {
			return Command{}, false, why
		}
	}
	return p.balanced(Command{Reason: karpv1.DisruptionReasonUnderutilized, Method: Replace, Consolidation: true, Replacements: []*solver.NewClaim{nc},
		Savings: price - nc.Price(), receivers: sim.receivers,
		Message: fmt.Sprintf("replaced by a cheaper node ($%.4f/h instead of $%.4f/h)", nc.Price(), price)}, cs)
}

// balanced gates a consolidation move of Balanced NodePools by their
// scores; other policies pass it as it is.
func (p *planning) balanced(cmd Command, cs []*candidate) (Command, bool, string) {
	cmd.Scores = p.balancedScores(cs, cmd.Savings)
	for _, s := range cmd.Scores {
		if !s.Approved {
			return Command{Scores: cmd.Scores}, false, "the savings are not worth the disruption: " + s.String()
		}
	}
	return cmd, true, ""
}

// DefaultSpotToSpotMinTypes is Karpenter's MinInstanceTypesForSpotToSpotConsolidation.
const DefaultSpotToSpotMinTypes = 15

// spotFlexibility applies Karpenter's guard to a spot replacement nc of
// cs: EC2's spot allocation picks among the types offered, not the
// cheapest, so a single node is replaced only when at least min types are
// cheaper and its own type is not among the min cheapest (else the next
// loop would replace the replacement); and the replacement offers only the
// min cheapest types. It returns why not, or the narrowed replacement.
func (p *planning) spotFlexibility(cs []*candidate, nc *solver.NewClaim) (*solver.NewClaim, string) {
	limit := p.in.Options.SpotToSpotMinTypes
	if limit <= 0 {
		limit = DefaultSpotToSpotMinTypes
	}
	type priced struct {
		it    *instancetype.InstanceType
		price float64
	}
	var opts []priced
	for _, it := range nc.InstanceTypes {
		if o, ok := it.Offerings.Cheapest(nc.Requirements); ok {
			opts = append(opts, priced{it, o.Price})
		}
	}
	sort.SliceStable(opts, func(i, j int) bool {
		if opts[i].price != opts[j].price {
			return opts[i].price < opts[j].price
		}
		return opts[i].it.Name < opts[j].it.Name
	})
	if len(cs) == 1 {
		if len(opts) < limit {
			return nil, fmt.Sprintf("spot-to-spot consolidation needs %d cheaper instance type options than the current one, found %d", limit, len(opts))
		}
		current := ""
		if c := cs[0]; c.claim != nil {
			current = c.claim.Labels[corev1.LabelInstanceTypeStable]
		} else if c.node != nil {
			current = c.node.Labels[corev1.LabelInstanceTypeStable]
		}
		for _, o := range opts[:limit] {
			if o.it.Name == current {
				return nil, fmt.Sprintf("its instance type %s is among the %d cheapest options; replacing it could be undone at once", current, limit)
			}
		}
	}
	out := *nc
	out.InstanceTypes = nil
	for i, o := range opts {
		if i == limit {
			break
		}
		out.InstanceTypes = append(out.InstanceTypes, o.it)
	}
	return &out, ""
}

// cheaper narrows a planned replacement to the instance types cheaper than
// price; false if none is left.
func cheaper(nc *solver.NewClaim, price float64) (*solver.NewClaim, bool) {
	out := *nc
	out.InstanceTypes = nil
	for _, it := range nc.InstanceTypes {
		if o, ok := it.Offerings.Cheapest(out.Requirements); ok && o.Price < price {
			out.InstanceTypes = append(out.InstanceTypes, it)
		}
	}
	return &out, len(out.InstanceTypes) > 0
}

// multiNode looks for the largest prefix of the candidates, by disruption
// cost, that can go at once for one cheaper node or none, by binary search
// as Karpenter does. It reports whether it produced a command.
func (p *planning) multiNode() bool {
	cs := p.withinBudget(p.underutilized())
	if len(cs) > p.in.Options.MultiNodeMax {
		cs = cs[:p.in.Options.MultiNodeMax]
	}
	if len(cs) < 2 {
		return false
	}
	lo, hi := 2, len(cs)
	var best Command
	bestN := 0
	for lo <= hi {
		mid := (lo + hi) / 2
		cmd, ok, _ := p.consolidation(cs[:mid])
		if ok {
			best, bestN = cmd, mid
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	if bestN == 0 {
		return false
	}
	best.Message = fmt.Sprintf("%d nodes: %s", bestN, best.Message)
	p.take(best, cs[:bestN])
	return true
}

// singleNode takes the first candidate, by disruption cost, that can be
// deleted or replaced by a cheaper node, and records for the others why not.
//
// Nodes that cannot pass a quick check of room and price are not simulated,
// and at most Options.SingleNodeSimulations are per loop, starting where the
// last loop stopped, so a large fleet where nothing can go costs a bounded
// time per loop and every node still gets its turn.
func (p *planning) singleNode() {
	cs := p.withinBudget(p.underutilized())
	done := false
	limit := p.in.Options.SingleNodeSimulations
	if limit <= 0 {
		limit = len(cs)
	}
	start := 0
	if len(cs) > 0 {
		start = p.in.SingleNodeCursor % len(cs)
	}
	p.plan.NextSingleNodeCursor = p.in.SingleNodeCursor
	for i := 0; i < len(cs) && !done; i++ {
		c := cs[(start+i)%len(cs)]
		if !p.mightGo(c) {
			why := "no other node has room for its pods and no cheaper instance type holds them"
			if c.spot && !p.in.Options.SpotToSpot {
				why = "no other node has room for its pods, and a spot node is only deleted, never replaced (spot-to-spot consolidation is off)"
			}
			block(c, "not consolidated: "+why)
			continue
		}
		if limit == 0 {
			block(c, "not consolidated yet: waits for a later loop's turn")
			continue
		}
		limit--
		p.plan.NextSingleNodeCursor = p.in.SingleNodeCursor + i + 1
		cmd, ok, why := p.consolidation([]*candidate{c})
		if !ok {
			block(c, "not consolidated: "+why)
			p.plan.Rejected = append(p.plan.Rejected, cmd.Scores...)
			continue
		}
		p.take(cmd, []*candidate{c})
		done = true
	}
}

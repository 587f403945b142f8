package planner

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// BalancedThreshold is the least score a move of a Balanced NodePool needs:
// 1/k with Karpenter's k of 2, so a move must save at least half as large
// a share of the NodePool's cost as the share of its disruption it causes.
const BalancedThreshold = 0.5

// Score is how a Balanced NodePool judged one consolidation move.
type Score struct {
	NodePool string
	// Value is SavingsFraction / DisruptionFraction; +Inf when the move
	// disrupts nothing.
	Value float64
	// SavingsFraction is the move's savings over the NodePool's hourly
	// cost; DisruptionFraction its disruption cost over the NodePool's.
	SavingsFraction, DisruptionFraction float64
	Approved                            bool
}

// String is the verdict in words, for events and explain.
func (s Score) String() string {
	verdict := ">="
	if !s.Approved {
		verdict = "<"
	}
	v := "+Inf"
	if !math.IsInf(s.Value, 1) {
		v = strconv.FormatFloat(s.Value, 'f', 2, 64)
	}
	return fmt.Sprintf("Balanced score %s %s %.2f (saves %.1f%% of NodePool %s's cost, disrupts %.1f%% of its pods' disruption cost)",
		v, verdict, BalancedThreshold, 100*s.SavingsFraction, s.NodePool, 100*s.DisruptionFraction)
}

// evictionCost is Karpenter's per-pod disruption cost: 1, raised by the
// pod's priority and its pod-deletion-cost annotation, clamped to [-10, 10].
func evictionCost(p *corev1.Pod) float64 {
	cost := 1.0
	if p.Spec.Priority != nil {
		cost += float64(*p.Spec.Priority) / math.Pow(2, 25)
	}
	if v, ok := p.Annotations[corev1.PodDeletionCost]; ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			cost += float64(n) / math.Pow(2, 27)
		}
	}
	return math.Max(-10, math.Min(10, cost))
}

// lifetimeRemaining is the share of a node's expireAfter still ahead, 1
// without one: a node near expiry costs less to disrupt, as it goes soon
// anyway.
func lifetimeRemaining(c *candidate, now time.Time) float64 {
	ttl := c.claim.Spec.ExpireAfter.Duration
	if ttl == nil || *ttl <= 0 {
		return 1
	}
	left := 1 - float64(now.Sub(c.created))/float64(*ttl)
	return math.Max(0, math.Min(1, left))
}

// disruptionCostOf is a candidate's disruption cost: the eviction costs of
// the pods that would move, scaled by its lifetime remaining.
func disruptionCostOf(c *candidate, now time.Time) float64 {
	sum := 0.0
	for _, p := range c.pods {
		sum += evictionCost(p)
	}
	return sum * lifetimeRemaining(c, now)
}

// balancedScores judges a move (cs removed, savings per hour) for each
// Balanced NodePool among cs's; other policies are not scored. A move
// spanning NodePools credits each with savings in proportion to the price
// of its nodes in the move. The NodePool totals are over every node the
// planner looked at.
func (p *planning) balancedScores(cs []*candidate, savings float64) []Score {
	move := map[string]*share{}
	movePrice := 0.0
	for _, c := range cs {
		if c.pool.Spec.Disruption.ConsolidationPolicy != karpv1.ConsolidationPolicyBalanced {
			continue
		}
		if move[c.pool.Name] == nil {
			move[c.pool.Name] = &share{}
		}
		move[c.pool.Name].price += c.price
		move[c.pool.Name].cost += disruptionCostOf(c, p.in.Now)
	}
	if len(move) == 0 {
		return nil
	}
	for _, c := range cs {
		movePrice += c.price
	}
	pools := make([]string, 0, len(move))
	for name := range move {
		pools = append(pools, name)
	}
	sort.Strings(pools)
	totals := p.poolTotals()
	var out []Score
	for _, name := range pools {
		totalPrice, totalCost := totals[name].price, totals[name].cost
		s := Score{NodePool: name}
		if totalPrice > 0 && movePrice > 0 {
			s.SavingsFraction = savings * (move[name].price / movePrice) / totalPrice
		}
		if totalCost > 0 {
			s.DisruptionFraction = move[name].cost / totalCost
		}
		switch {
		case s.DisruptionFraction <= 0:
			s.Value = math.Inf(1)
		default:
			s.Value = s.SavingsFraction / s.DisruptionFraction
		}
		s.Approved = s.Value >= BalancedThreshold
		out = append(out, s)
	}
	return out
}

// share is an hourly price and a disruption cost, of a move or a NodePool.
type share struct{ price, cost float64 }

// poolTotals are each NodePool's price and disruption cost over every node
// the planner looked at, computed once per plan: moves are scored many
// times over (each single-node trial, each step of the multi-node search).
func (p *planning) poolTotals() map[string]share {
	if p.totals == nil {
		p.totals = map[string]share{}
		for _, c := range p.cands {
			t := p.totals[c.pool.Name]
			t.price += c.price
			t.cost += disruptionCostOf(c, p.in.Now)
			p.totals[c.pool.Name] = t
		}
	}
	return p.totals
}

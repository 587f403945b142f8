package planner

import (
	"fmt"
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// ReasonUnhealthy marks node repair. No budget governs it, and no
// do-not-disrupt pod or PDB holds it: the node is broken.
const ReasonUnhealthy Reason = "Unhealthy"

// MaxUnhealthyShare is Karpenter's: while more than this share of a
// NodePool's nodes (rounded up) are unhealthy, none of them is repaired, as
// the cause is more likely the cluster's (a network partition, a bad
// image) than the nodes', and replacing them all would only add churn.
const MaxUnhealthyShare = 0.2

// unhealthy says which repair policy a node has failed: the condition and
// why, or "" and "".
func unhealthy(n *corev1.Node, policies []cloudprovider.RepairPolicy, now time.Time) (condition corev1.NodeConditionType, why string) {
	for _, pol := range policies {
		for _, c := range n.Status.Conditions {
			if c.Type != pol.ConditionType || c.Status != pol.ConditionStatus {
				continue
			}
			if since := now.Sub(c.LastTransitionTime.Time); since >= pol.Toleration {
				return c.Type, fmt.Sprintf("node condition %s has been %s for %s (tolerated for %s)", c.Type, c.Status,
					since.Truncate(time.Second), pol.Toleration)
			}
		}
	}
	return "", ""
}

// repair replaces nodes that failed a repair policy, replacement first
// when their pods need room, unless too many of their NodePool's nodes are
// unhealthy at once.
func (p *planning) repair() {
	policies := p.in.RepairPolicies
	if policies == nil {
		policies = cloudprovider.DefaultRepairPolicies()
	}
	byPool := map[string][]*candidate{}
	why := map[*candidate]string{}
	cond := map[*candidate]corev1.NodeConditionType{}
	for _, c := range p.live() {
		if t, w := unhealthy(c.node, policies, p.in.Now); w != "" {
			byPool[c.pool.Name] = append(byPool[c.pool.Name], c)
			why[c], cond[c] = w, t
		}
	}
	pools := make([]string, 0, len(byPool))
	for name := range byPool {
		pools = append(pools, name)
	}
	sort.Strings(pools)
	for _, name := range pools {
		cs := byPool[name]
		total := p.total[name]
		if limit := int(math.Ceil(MaxUnhealthyShare * float64(total))); len(cs) > limit {
			msg := fmt.Sprintf("node repair is blocked: %d of the %d nodes of NodePool %s are unhealthy, more than %d (20%%)",
				len(cs), total, name, limit)
			for _, c := range cs {
				block(c, msg)
			}
			p.plan.RepairBlocked[name] = msg
			continue
		}
		for _, c := range cs {
			cmd := Command{Reason: ReasonUnhealthy, Method: Delete, Message: why[c], Condition: string(cond[c])}
			if sim := p.simulate(c); sim.ok() && len(sim.plan.NewClaims) > 0 {
				cmd.Method, cmd.Replacements, cmd.receivers = Replace, sim.plan.NewClaims, sim.receivers
			}
			p.take(cmd, []*candidate{c})
		}
	}
}

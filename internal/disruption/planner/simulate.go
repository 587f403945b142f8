package planner

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/internal/disruption/protect"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// simulation is the answer to "if these nodes went, where would their pods
// go?".
type simulation struct {
	plan *solver.Plan
	// unschedulable are the moving pods that would find no place.
	unschedulable []solver.Unschedulable
	// receivers are the existing nodes the candidates' pods would move to.
	receivers []string
	err       error
}

// ok reports whether every moving pod found a place.
func (s simulation) ok() bool { return s.err == nil && len(s.unschedulable) == 0 }

// simulate removes the nodes of gone (claim names) and of p.removed, closes
// those of p.closed, and
// places their pods, with the solver, on the rest of the cluster and on new
// NodeClaims. Pending pods that are not the nodes' own are left out: the
// provisioner places those, and a pod that fits nowhere must not stop a
// cheaper fleet.
func (p *planning) simulate(gone ...*candidate) simulation {
	return p.simulateOpening(nil, gone...)
}

// simulateOpening is simulate with the closed nodes of reopen taking pods.
func (p *planning) simulateOpening(reopen map[string]bool, gone ...*candidate) simulation {
	// drop holds the claims whose nodes go, true for the candidates' own.
	drop := map[string]bool{}
	for name := range p.removed {
		drop[name] = false
	}
	for _, c := range gone {
		drop[c.claim.Name] = true
	}
	in := *p.base
	in.Pods = append([]*corev1.Pod(nil), p.draining...)
	in.Nodes = make([]solver.Node, len(p.base.Nodes))
	copy(in.Nodes, p.base.Nodes)
	own := map[types.UID]bool{}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		if claim := p.claimOf[n.Name]; p.closed[claim] && !reopen[claim] {
			n.Deleting = true // closed to new pods; its own stay
		} else if reopen[claim] {
			n.Taints = withoutAttritionTaint(n.Taints)
		}
		mine, dropped := drop[p.claimOf[n.Name]]
		if !dropped {
			continue
		}
		n.Deleting = true
		for _, pod := range n.Pods {
			if snapshot.IsDaemonSetPod(pod) || protect.Mirror(pod) || pod.Spec.NodeName == "" {
				// DaemonSet pods go with the node; nominated pending pods are
				// the provisioner's to place again.
				continue
			}
			in.Pods = append(in.Pods, pod)
			if mine {
				own[pod.UID] = true
			}
		}
		n.Pods = nil
	}
	if len(own) == 0 {
		return simulation{plan: &solver.Plan{}}
	}
	// The solver places pending pods; bound ones would keep their nodeName
	// in its checks, so it sees copies without it.
	for i, pod := range in.Pods {
		if pod.Spec.NodeName != "" {
			cp := pod.DeepCopy()
			cp.Spec.NodeName = ""
			in.Pods[i] = cp
		}
	}
	p.solves++
	plan, err := solver.Solve(&in)
	if err != nil {
		return simulation{err: err}
	}
	return ownPart(plan, own)
}

// ownPart keeps what concerns the candidates' own pods. The pods of nodes
// removed earlier in the loop take part in the solve, so that they claim
// their room first, but their new homes are the earlier command's business
// (or the provisioner's): without this a drifted node of one NodePool was
// given a "replacement" in another NodePool, for another command's pods.
func ownPart(plan *solver.Plan, own map[types.UID]bool) simulation {
	out := solver.Plan{}
	index := map[int]int{} // plan's NewClaims index -> out's
	for i, nc := range plan.NewClaims {
		for _, pod := range nc.Pods {
			if own[pod.UID] {
				index[i] = len(out.NewClaims)
				out.NewClaims = append(out.NewClaims, nc)
				break
			}
		}
	}
	var receivers []string
	seen := map[string]bool{}
	for _, pl := range plan.Placements {
		if !own[pl.Pod.UID] {
			continue
		}
		if pl.NewClaim >= 0 {
			pl.NewClaim = index[pl.NewClaim]
		} else if !seen[pl.Node] {
			seen[pl.Node] = true
			receivers = append(receivers, pl.Node)
		}
		out.Placements = append(out.Placements, pl)
	}
	for _, u := range plan.Unschedulable {
		if own[u.Pod.UID] {
			out.Unschedulable = append(out.Unschedulable, u)
		}
	}
	return simulation{plan: &out, unschedulable: out.Unschedulable, receivers: receivers}
}

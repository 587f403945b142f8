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
	in, own := p.simInput(reopen, gone)
	if len(own) == 0 {
		return simulation{plan: &solver.Plan{}}
	}
	unbind(in.Pods)
	p.solves++
	plan, err := solver.Solve(&in)
	if err != nil {
		return simulation{err: err}
	}
	return ownPart(plan, own)
}

// simInput is the solver's view of the cluster with the nodes of gone and
// of p.removed taken away, their pods to place (the draining pods first),
// the closed nodes taking no new pods but those of reopen, which lose the
// attrition taint. own holds the UIDs of gone's pods.
func (p *planning) simInput(reopen map[string]bool, gone []*candidate) (in solver.Input, own map[types.UID]bool) {
	// drop holds the claims whose nodes go, true for the candidates' own.
	drop := map[string]bool{}
	for name := range p.removed {
		drop[name] = false
	}
	for _, c := range gone {
		drop[c.claim.Name] = true
	}
	in = *p.base
	in.Pods = append([]*corev1.Pod(nil), p.draining...)
	in.Nodes = make([]solver.Node, len(p.base.Nodes))
	copy(in.Nodes, p.base.Nodes)
	own = map[types.UID]bool{}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		claim := p.claimOf[n.Name]
		if p.closed[claim] && !reopen[claim] {
			n.Deleting = true // closed to new pods; its own stay
		} else if reopen[claim] {
			n.Taints = withoutAttritionTaint(n.Taints)
		}
		mine, dropped := drop[claim]
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
	return in, own
}

// unbind replaces the bound pods among pods with copies without a
// nodeName: the solver places pending pods, and a bound one would keep its
// nodeName in its checks.
func unbind(pods []*corev1.Pod) {
	for i, pod := range pods {
		if pod.Spec.NodeName != "" {
			cp := pod.DeepCopy()
			cp.Spec.NodeName = ""
			pods[i] = cp
		}
	}
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

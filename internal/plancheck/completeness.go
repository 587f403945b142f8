package plancheck

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
)

// freshNodeName is the hostname of a trial node. It must differ from every
// node's, or hostname topology would merge the two.
const freshNodeName = "plancheck-fresh-node"

// checkCompleteness: a pod the plan gives up on must fit nowhere. Each pod of
// plan.Unschedulable is tried on its own against the cluster the plan leaves
// (every placement bound): first on each node of it, existing or new, then on
// a fresh node of each NodePool's instance types, in each available offering,
// that the pool's limits still allow. A fit means kube-scheduler would bind
// the pod, or the provider could launch a node it binds to: the plan gave up
// too soon. The same filters judge a fit as judge a placement, so the two
// checks cannot disagree about what kube-scheduler accepts.
//
// Pods are tried one at a time, not together: two pods that each fit alone
// may not fit together, and either listing is then defensible.
func (ck *checker) checkCompleteness() {
	once := ck.listedOnce()
	for _, u := range ck.plan.Unschedulable {
		p := u.Pod
		if p == nil || !once[podKey(p)] {
			continue // a structural mistake, reported by checkCoverage
		}
		why := "listed as unschedulable"
		if u.Reason != nil && u.Reason.Summary != "" {
			why += fmt.Sprintf(" (%s)", u.Reason.Summary)
		}
		if n := ck.fitsPlanNode(p); n != nil {
			what := "existing node"
			if n.claim >= 0 {
				what = fmt.Sprintf("node of NewClaims[%d]", n.claim)
			}
			ck.report(p, n.name, "completeness", fmt.Sprintf("%s, but kube-scheduler would bind it to %s %s once the plan's placements are bound", why, what, n.name))
			continue
		}
		if f, ok := ck.fitsFreshNode(p); ok {
			ck.report(p, "", "completeness", fmt.Sprintf("%s, but it fits a fresh node of NodePool %s: instance type %s, %s in %s, within the pool's limits",
				why, f.pool.Name, f.it.Name, f.offering.CapacityType, f.offering.Zone))
		}
	}
}

// listedOnce is the set of pending pods the plan lists exactly once, as
// placed or unschedulable; checkCoverage reports the others.
func (ck *checker) listedOnce() map[string]bool {
	pending := map[string]bool{}
	for _, p := range ck.in.Pods {
		if p != nil {
			pending[podKey(p)] = true
		}
	}
	count := map[string]int{}
	for _, pl := range ck.plan.Placements {
		if pl.Pod != nil {
			count[podKey(pl.Pod)]++
		}
	}
	for _, u := range ck.plan.Unschedulable {
		if u.Pod != nil {
			count[podKey(u.Pod)]++
		}
	}
	once := map[string]bool{}
	for key, n := range count {
		if n == 1 && pending[key] {
			once[key] = true
		}
	}
	return once
}

// fitsPlanNode returns the first node of the plan's final node set that
// kube-scheduler would bind p to, or nil.
func (ck *checker) fitsPlanNode(p *corev1.Pod) *node {
	all := len(ck.filters())
	for _, n := range ck.nodes {
		switch {
		case n.deleting:
			continue
		case n.claim >= 0 && (n.launchType == nil || !n.daemonsBound):
			continue // no node the provider launches, or a malformed claim
		}
		if ck.fits(p, n, all) {
			return n
		}
	}
	return nil
}

// freshOption is one node the provider could launch for a pool.
type freshOption struct {
	pool     *solver.NodePool
	it       *instancetype.InstanceType
	offering instancetype.Offering
}

// fitsFreshNode tries p on a fresh node of every pool, type and available
// offering, in input order, and returns the first it fits. The node-local
// filters run on the empty node first: they are cheap, and a pod they refuse
// there is refused once DaemonSet pods take their share too. Only then is
// the node added to the cluster for the filters that look across it.
func (ck *checker) fitsFreshNode(p *corev1.Pod) (freshOption, bool) {
	all := len(ck.filters())
	terms := podNodeTerms(p)
	for pi := range ck.in.NodePools {
		pool := &ck.in.NodePools[pi]
		committed, claims := ck.poolCommitted(pool)
		for _, it := range pool.InstanceTypes {
			if it == nil || !withinLimits(pool, committed, claims, it) {
				continue
			}
			for _, o := range it.Offerings {
				if !o.Available {
					continue
				}
				f := freshOption{pool: pool, it: it, offering: o}
				for _, term := range terms {
					n, ok := ck.freshNode(f, term)
					if !ok || !ck.fits(p, n, nodeLocalFilters) {
						continue
					}
					mark := ck.addTrial(n)
					ok = ck.fits(p, n, all)
					ck.removeTrial(mark)
					if ok {
						return f, true
					}
				}
			}
		}
	}
	return freshOption{}, false
}

// freshNode builds the node the provider would launch for a pod with node
// requirements term: the pool's requirements and labels, the type's, the
// offering's zone and capacity type, narrowed by the term where they leave a
// choice (a pool that allows team In [a b] gives a pod that needs team=a a
// node labeled team=a). Keys the pool and type say nothing about are not
// narrowed: no node would carry a label nobody defines. ok is false when the
// offering or the term is outside what the pool and type allow.
func (ck *checker) freshNode(f freshOption, term scheduling.Requirements) (*node, bool) {
	reqs := f.pool.Requirements.Intersect(scheduling.FromLabels(f.pool.Labels))
	if reqs.Compatible(f.it.Requirements) != nil {
		return nil, false
	}
	reqs = reqs.Intersect(f.it.Requirements)
	if !f.offering.Allowed(reqs) {
		return nil, false
	}
	reqs = reqs.Intersect(scheduling.NewRequirements(
		scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, f.offering.Zone),
		scheduling.NewRequirement(instancetype.CapacityTypeLabel, corev1.NodeSelectorOpIn, f.offering.CapacityType),
	))
	narrow := scheduling.Requirements{}
	for _, key := range term.Keys() {
		if reqs.Has(key) {
			narrow.Add(term.Get(key))
		}
	}
	if reqs.Compatible(narrow) != nil {
		return nil, false
	}
	labels := reqs.Intersect(narrow).Labels()
	maps.Copy(labels, f.pool.Labels)
	labels["karpenter.sh/nodepool"] = f.pool.Name
	labels[corev1.LabelHostname] = freshNodeName
	return &node{
		name:       freshNodeName,
		obj:        nodeObject(freshNodeName, labels, f.pool.Taints, ck.allocatable(f.it)),
		claim:      -1,
		launchType: f.it,
		used:       map[corev1.ResourceName]int64{},
	}, true
}

// podNodeTerms are the pod's ways to meet its node requirements: one per
// term of its required node affinity (the terms are ORed), each with its
// nodeSelector, or the nodeSelector alone. They only choose a fresh node's
// labels; kube-scheduler's matcher still judges the node.
func podNodeTerms(p *corev1.Pod) []scheduling.Requirements {
	sel := scheduling.FromLabels(p.Spec.NodeSelector)
	var required *corev1.NodeSelector
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if required == nil || len(required.NodeSelectorTerms) == 0 {
		return []scheduling.Requirements{sel}
	}
	out := make([]scheduling.Requirements, 0, len(required.NodeSelectorTerms))
	for _, t := range required.NodeSelectorTerms {
		out = append(out, sel.Intersect(scheduling.FromNodeSelectorRequirements(t.MatchExpressions...)))
	}
	return out
}

// withinLimits: one more node of type it keeps the pool within its limits,
// given what its usage and the plan's claims of the pool commit already
// (poolCommitted), counted as checkLimits counts them.
func withinLimits(pool *solver.NodePool, committed corev1.ResourceList, claims int, it *instancetype.InstanceType) bool {
	for res, limit := range pool.Limits {
		if res == "nodes" {
			nodes := pool.Usage[res]
			if nodes.Value()+int64(claims)+1 > limit.Value() {
				return false
			}
			continue
		}
		got := committed[res]
		got.Add(it.Capacity[res])
		if got.Cmp(limit) > 0 {
			return false
		}
	}
	return true
}

package solver

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// explain says why no pod of g could be placed: per existing node (counted by
// reason), per NodePool, and per instance type with the allocatable
// arithmetic. It runs only for pods that failed, so it favours clarity.
func (s *state) explain(g *group) *Reason {
	s.explaining = true
	defer func() { s.explaining = false }()
	r := &Reason{}
	switch {
	case g.blocked != "":
		r.Summary = "unschedulable: " + g.blocked
		return r
	case len(g.tooManyResources) > 0:
		r.Summary = fmt.Sprintf("requests more distinct resources than one solve tracks (%d); not tracked: %s", maxResources, strings.Join(g.tooManyResources, ", "))
		return r
	}
	counts := map[string]*NodeCount{}
	for _, t := range s.nodes {
		var ch choice
		ref := s.fitNode(g, t, &ch)
		if ref == nil {
			continue
		}
		c, ok := counts[ref.reason]
		if !ok {
			c = &NodeCount{Reason: ref.reason, Example: t.name}
			counts[ref.reason] = c
		}
		c.Nodes++
	}
	for _, c := range counts {
		r.Existing = append(r.Existing, *c)
	}
	sort.Slice(r.Existing, func(i, j int) bool {
		if r.Existing[i].Nodes != r.Existing[j].Nodes {
			return r.Existing[i].Nodes > r.Existing[j].Nodes
		}
		return r.Existing[i].Reason < r.Existing[j].Reason
	})
	for _, p := range s.pools {
		r.NodePools = append(r.NodePools, s.explainPool(g, p))
	}
	r.Summary = summarize(r)
	return r
}

func (s *state) explainPool(g *group, p *pool) PoolReason {
	pr := PoolReason{NodePool: p.np.Name}
	if ok, taint := tolerates(g.tolerations, p.taints, true); !ok {
		pr.Reason = "taint " + taintString(taint) + " not tolerated"
		return pr
	}
	if err := p.reqs.Compatible(g.reqs); err != nil {
		pr.Reason = "requirements: " + err.Error()
		return pr
	}
	if key := undefinedLabel(p, g); key != "" {
		pr.Reason = fmt.Sprintf("the pod requires label %s, which nodes of this NodePool do not have: add it to the NodePool's labels or requirements", key)
		return pr
	}
	if p.nodesLimited && p.remainingNodes <= 0 {
		pr.Reason = "limit reached: nodes"
		return pr
	}
	if len(p.types) == 0 {
		pr.Reason = "no instance type with an available offering meets the NodePool's requirements"
		return pr
	}
	reqs := p.reqs.Intersect(g.reqs)
	daemon := s.daemonOverhead(p, reqs)
	need := daemon
	need.add(&g.req)
	fitting := 0
	for _, it := range p.types {
		tr := TypeReason{InstanceType: it.it.Name}
		if err := it.it.Requirements.Compatible(reqs); err != nil {
			tr.Reason = "requirements: " + err.Error()
		} else if _, ok := it.it.Offerings.Cheapest(reqs); !ok {
			tr.Reason = "no available offering in the allowed zones and capacity types"
		} else if f, i := fits(&need, &it.alloc); !f {
			name := s.ri.names[i]
			a := it.it.Arithmetic(name)
			tr.Resource, tr.Arithmetic = name, &a
			tr.Needed = quantity(name, need[i])
			tr.Reason = shortfall(a, tr.Needed)
			if daemon[i] > 0 {
				tr.Reason += fmt.Sprintf(" (pod %s + DaemonSets %s)", fmtAmount(name, g.req[i]), fmtAmount(name, daemon[i]))
			}
		} else if !s.fitsPoolLimits(p, it) {
			tr.Reason = "would exceed the NodePool's limits"
		} else {
			fitting++
			tr.Reason = "fits alone, but topology or other pods' constraints left no place"
		}
		pr.InstanceTypes = append(pr.InstanceTypes, tr)
	}
	if fitting > 0 {
		var ch choice
		t := &target{name: "new", pool: p, reqs: reqs, taints: p.taints}
		if ref := s.chooseDomains(g, t, reqs, &ch); ref != nil {
			pr.Reason = ref.reason
			pr.InstanceTypes = nil
		}
	}
	return pr
}

func summarize(r *Reason) string {
	var parts []string
	if n := countNodes(r.Existing); n > 0 {
		parts = append(parts, fmt.Sprintf("no existing node fits (%d refused: %s)", n, r.Existing[0].Reason))
	}
	if len(r.NodePools) == 0 {
		parts = append(parts, "no NodePool")
	}
	for _, p := range r.NodePools {
		switch {
		case p.Reason != "":
			parts = append(parts, fmt.Sprintf("NodePool %s: %s", p.NodePool, p.Reason))
		case len(p.InstanceTypes) > 0:
			parts = append(parts, fmt.Sprintf("NodePool %s: no instance type fits (%s: %s)", p.NodePool, p.InstanceTypes[0].InstanceType, p.InstanceTypes[0].Reason))
		}
	}
	return "unschedulable: " + strings.Join(parts, "; ")
}

func countNodes(cs []NodeCount) int {
	n := 0
	for _, c := range cs {
		n += c.Nodes
	}
	return n
}

func quantity(name corev1.ResourceName, v int64) resource.Quantity {
	switch name {
	case corev1.ResourceCPU:
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return *resource.NewQuantity(v, resource.BinarySI)
	}
	return *resource.NewQuantity(v, resource.DecimalSI)
}

func fmtAmount(name corev1.ResourceName, v int64) string {
	q := quantity(name, v)
	return q.String()
}

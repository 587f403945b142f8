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
		pr.Reason = whyNoTypes(p)
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
			s.setResource(&tr, it, i, &need, &g.req, &daemon)
			tr.Reason = shortfall(*tr.Arithmetic, tr.Needed)
			if daemon[i] > 0 {
				tr.Reason += fmt.Sprintf(" (pod %s + DaemonSets %s)", fmtAmount(name, g.req[i]), fmtAmount(name, daemon[i]))
			}
		} else if !s.fitsPoolLimits(p, it) {
			tr.Reason = "would exceed the NodePool's limits"
		} else {
			fitting++
			tr.Fits = true
			if i := tightest(&need, &it.alloc); i >= 0 {
				s.setResource(&tr, it, i, &need, &g.req, &daemon)
			}
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

// setResource fills in the arithmetic of resource i for a type.
func (s *state) setResource(tr *TypeReason, it *itype, i int, need, pod, daemon *vec) {
	name := s.ri.names[i]
	a := it.it.Arithmetic(name)
	tr.Resource, tr.Arithmetic = name, &a
	tr.Needed = quantity(name, need[i])
	tr.Pod = quantity(name, pod[i])
	tr.DaemonSets = quantity(name, daemon[i])
}

// tightest is the resource the pod uses the largest share of, or -1 when
// it requests nothing the type has. The pods count is left out: one slot
// of a hundred is never what a person asks about.
func tightest(need, have *vec) int {
	best, share := -1, -1.0
	for i := range need {
		if i == podsIdx || need[i] <= 0 || have[i] <= 0 {
			continue
		}
		if f := float64(need[i]) / float64(have[i]); f > share {
			best, share = i, f
		}
	}
	return best
}

// ExplainPod says, for one pod, why each existing node refuses it and why
// each NodePool and instance type can or cannot hold it, as Reason does for
// a pod the solver gave up on, but whether or not the pod would be placed.
// The pod is judged as the only pending pod: in's other pending pods are
// not placed first. Types that fit have Fits set; Summary is empty unless
// nothing can hold the pod at all (a missing volume, say), which it names.
func ExplainPod(in *Input, pod *corev1.Pod) (*Reason, error) {
	one := *in
	one.Pods = []*corev1.Pod{pod}
	s, err := compile(&one)
	if err != nil {
		return nil, err
	}
	g := s.groups[0]
	r := s.explain(g)
	if g.blocked == "" && len(g.tooManyResources) == 0 {
		// Whether the pod is placed is Solve's to say, not this summary's.
		r.Summary = ""
	}
	return r, nil
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

package planner

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// room is a node's cpu (millicores) and memory (bytes) left for pods.
type room struct{ cpu, mem int64 }

func podRoom(m *solver.Requests, p *corev1.Pod) room {
	r := m.Of(p)
	return room{cpu: r.Cpu().MilliValue(), mem: r.Memory().Value()}
}

// freeRoom is what each node has left, by node name.
func freeRoom(c *snapshot.Cluster, m *solver.Requests) map[string]room {
	out := map[string]room{}
	for _, n := range c.Nodes {
		a := n.Status.Allocatable
		out[n.Name] = room{cpu: a.Cpu().MilliValue(), mem: a.Memory().Value()}
	}
	for _, p := range c.Pods {
		if !snapshot.Bound(p) {
			continue
		}
		if f, ok := out[p.Spec.NodeName]; ok {
			r := podRoom(m, p)
			out[p.Spec.NodeName] = room{cpu: f.cpu - r.cpu, mem: f.mem - r.mem}
		}
	}
	return out
}

// mightGo is a quick necessary condition for consolidating c alone, so
// that the solver runs only for nodes that might pass: either every pod of
// c fits in the room some other node has and all of them in the room all
// others have (delete), or an instance type cheaper than c, allowed by the
// pods' node selectors, holds them all (replace). Constraints beyond
// resources and node selectors are ignored, which only lets more through.
func (p *planning) mightGo(c *candidate) bool {
	var need, largest room
	for _, pod := range c.pods {
		r := podRoom(p.base.Requests, pod)
		need.cpu += r.cpu
		need.mem += r.mem
		largest.cpu = max(largest.cpu, r.cpu)
		largest.mem = max(largest.mem, r.mem)
	}
	var total room
	fits := false
	for _, o := range p.cands {
		if o == c || p.removed[o.claim.Name] || p.closed[o.claim.Name] {
			continue
		}
		f := p.free[o.node.Name]
		total.cpu += max(f.cpu, 0)
		total.mem += max(f.mem, 0)
		fits = fits || (f.cpu >= largest.cpu && f.mem >= largest.mem)
	}
	if fits && total.cpu >= need.cpu && total.mem >= need.mem {
		return true
	}
	if c.spot && !p.in.Options.SpotToSpot || c.price <= 0 {
		return false
	}
	for _, it := range p.in.PoolTypes[c.pool.Name] {
		a := it.Allocatable()
		if a.Cpu().MilliValue() < need.cpu || a.Memory().Value() < need.mem || !selectorsAllow(it.Requirements.Labels(), c.pods) {
			continue
		}
		for _, o := range it.Offerings {
			if o.Price < c.price {
				return true
			}
		}
	}
	return false
}

// selectorsAllow reports whether no pod's nodeSelector contradicts the
// single-valued labels of an instance type.
func selectorsAllow(labels map[string]string, pods []*corev1.Pod) bool {
	for _, p := range pods {
		for k, v := range p.Spec.NodeSelector {
			if have, ok := labels[k]; ok && have != v {
				return false
			}
		}
	}
	return true
}

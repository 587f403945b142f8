package planner

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/solver"
)

// ReclaimAttrition is the provisioner's side of drain by attrition: when a
// plan needs new nodes while nodes drain by attrition, it plans again as if
// they took pods, and if that needs fewer new nodes, it returns that plan
// and the draining nodes it puts pods on, whose taint must come off. Room
// already paid for is used before more is bought. Of the draining nodes,
// the fullest are opened first: their pods keep them for longest anyway,
// while the emptiest are about to go, and a new job would hold one for its
// whole length. Of the as full, the one whose newest pod started last.
func ReclaimAttrition(in *solver.Input, plan *solver.Plan) (*solver.Plan, map[string]bool, error) {
	if len(plan.NewClaims) == 0 {
		return plan, nil, nil
	}
	var waiting []room // what the pods that need new nodes ask for
	for _, nc := range plan.NewClaims {
		for _, pod := range nc.Pods {
			waiting = append(waiting, podRoom(in.Requests, pod))
		}
	}
	var draining []int // indexes into in.Nodes
	for i, n := range in.Nodes {
		for _, t := range n.Taints {
			// A full node is no use, and among the fullest it would
			// take the place of one that has room.
			if t.Key == AttritionTaintKey && holdsAny(nodeRoom(in.Requests, &n), waiting) {
				draining = append(draining, i)
				break
			}
		}
	}
	if len(draining) == 0 {
		return plan, nil, nil
	}
	sort.SliceStable(draining, func(a, b int) bool {
		na, nb := &in.Nodes[draining[a]], &in.Nodes[draining[b]]
		if len(na.Pods) != len(nb.Pods) {
			return len(na.Pods) > len(nb.Pods)
		}
		// As full: the one whose newest job began last, which that job
		// holds longest anyway. By name, a node whose jobs were about to
		// end was opened, took a ten-minute job, and was held by it.
		if a, b := newestStart(na.Pods), newestStart(nb.Pods); !a.Equal(b) {
			return a.After(b)
		}
		return na.Name < nb.Name
	})
	all, err := openDraining(in, draining)
	if err != nil {
		return nil, nil, err
	}
	if len(all.NewClaims) >= len(plan.NewClaims) {
		return plan, nil, nil
	}
	best := all
	// The fewest of the fullest that do as well; a few tries at most, as
	// each is a solve.
	for k := 1; k < len(draining) && k <= reclaimTries; k++ {
		some, err := openDraining(in, draining[:k])
		if err != nil {
			return nil, nil, err
		}
		if len(some.NewClaims) <= len(all.NewClaims) {
			best = some
			break
		}
	}
	isDraining := map[string]bool{}
	for _, i := range draining {
		isDraining[in.Nodes[i].Name] = true
	}
	used := map[string]bool{}
	for _, pl := range best.Placements {
		if isDraining[pl.Node] {
			used[pl.Node] = true
		}
	}
	return best, used, nil
}

// reclaimTries bounds the smaller sets of draining nodes ReclaimAttrition
// tries before it opens them all.
const reclaimTries = 4

// openDraining plans in with the attrition taint lifted from the nodes at
// the given indexes.
func openDraining(in *solver.Input, idx []int) (*solver.Plan, error) {
	alt := *in
	alt.Nodes = make([]solver.Node, len(in.Nodes))
	copy(alt.Nodes, in.Nodes)
	for _, i := range idx {
		alt.Nodes[i].Taints = withoutAttritionTaint(alt.Nodes[i].Taints)
	}
	plan, err := solver.Solve(&alt)
	if err != nil {
		return nil, fmt.Errorf("planning with the nodes that drain by attrition: %w", err)
	}
	return plan, nil
}

// nodeRoom is what n has left of its allocatable CPU and memory.
func nodeRoom(m *solver.Requests, n *solver.Node) room {
	r := room{cpu: n.Allocatable.Cpu().MilliValue(), mem: n.Allocatable.Memory().Value()}
	for _, pod := range n.Pods {
		pr := podRoom(m, pod)
		r.cpu -= pr.cpu
		r.mem -= pr.mem
	}
	return r
}

// holdsAny reports whether free has room for at least one of pods.
func holdsAny(free room, pods []room) bool {
	for _, r := range pods {
		if r.cpu <= free.cpu && r.mem <= free.mem {
			return true
		}
	}
	return false
}

// withoutAttritionTaint is taints less the attrition taint, in a new slice.
func withoutAttritionTaint(taints []corev1.Taint) []corev1.Taint {
	var kept []corev1.Taint
	for _, t := range taints {
		if t.Key != AttritionTaintKey {
			kept = append(kept, t)
		}
	}
	return kept
}

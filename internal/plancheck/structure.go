package plancheck

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
)

// checkStructure checks what the plan says about itself, before any pod is
// bound: every pending pod is accounted for exactly once, every placement
// names one target, and every claim is consistent with its pods, its pool and
// its instance types. It resolves ck.targets for the replay.
func (ck *checker) checkStructure() {
	ck.checkCoverage()
	ck.resolveTargets()
	for i, c := range ck.plan.NewClaims {
		if c != nil {
			ck.checkClaim(i, c)
		}
	}
}

// checkCoverage: each pod of in.Pods is placed or unschedulable, once. Pods
// are matched by pointer, or by namespace/name when the plan holds copies.
func (ck *checker) checkCoverage() {
	byKey := map[string]*corev1.Pod{}
	known := map[*corev1.Pod]bool{}
	for _, p := range ck.in.Pods {
		if p == nil {
			continue
		}
		if _, dup := byKey[podKey(p)]; dup {
			ck.report(p, "", "plan", "input lists the pod twice")
		}
		byKey[podKey(p)] = p
		known[p] = true
	}
	seen := map[string][]string{}
	note := func(p *corev1.Pod, where string) {
		if p == nil {
			ck.report(nil, "", "plan", where+" has no pod")
			return
		}
		if !known[p] && byKey[podKey(p)] == nil {
			ck.report(p, "", "plan", where+" names a pod that is not pending in the input")
			return
		}
		seen[podKey(p)] = append(seen[podKey(p)], where)
	}
	for i, pl := range ck.plan.Placements {
		note(pl.Pod, fmt.Sprintf("Placements[%d]", i))
	}
	for i, u := range ck.plan.Unschedulable {
		note(u.Pod, fmt.Sprintf("Unschedulable[%d]", i))
	}
	for key, p := range byKey {
		switch n := len(seen[key]); {
		case n == 0:
			ck.report(p, "", "plan", "pending pod is neither placed nor unschedulable")
		case n > 1:
			ck.report(p, "", "plan", fmt.Sprintf("pod appears %d times: %s", n, strings.Join(seen[key], ", ")))
		}
	}
}

// resolveTargets finds each placement's node; a placement must name either an
// existing node that is not being deleted, or a valid claim index.
func (ck *checker) resolveTargets() {
	ck.targets = make([]*node, len(ck.plan.Placements))
	ck.onClaim = make([][]*corev1.Pod, len(ck.plan.NewClaims))
	for i, pl := range ck.plan.Placements {
		switch {
		case pl.Node != "" && pl.NewClaim == -1:
			n := ck.byName[pl.Node]
			if n == nil || n.claim >= 0 {
				ck.report(pl.Pod, pl.Node, "plan", fmt.Sprintf("Placements[%d] names node %q, which is not an existing node", i, pl.Node))
				continue
			}
			if n.deleting {
				ck.report(pl.Pod, pl.Node, "plan", fmt.Sprintf("Placements[%d] puts the pod on a node that is being deleted", i))
			}
			ck.targets[i] = n
		case pl.Node == "" && pl.NewClaim >= 0 && pl.NewClaim < len(ck.plan.NewClaims):
			ck.targets[i] = ck.claims[pl.NewClaim] // nil for a nil claim, reported already
			ck.onClaim[pl.NewClaim] = append(ck.onClaim[pl.NewClaim], pl.Pod)
		default:
			ck.report(pl.Pod, pl.Node, "plan", fmt.Sprintf("Placements[%d] must name an existing node or a claim in [0,%d), not Node=%q NewClaim=%d",
				i, len(ck.plan.NewClaims), pl.Node, pl.NewClaim))
		}
	}
}

// checkClaim checks one claim against its placements, pool and types.
func (ck *checker) checkClaim(i int, c *solver.NewClaim) {
	n := ck.claims[i]
	where := fmt.Sprintf("NewClaims[%d]", i)
	ck.checkClaimPods(i, c, n.name)

	pool := ck.pools[c.NodePool]
	if pool == nil {
		ck.report(nil, n.name, "plan", fmt.Sprintf("%s: NodePool %q does not exist", where, c.NodePool))
	} else {
		poolReqs := pool.Requirements.Intersect(scheduling.FromLabels(pool.Labels))
		if err := c.Requirements.Compatible(poolReqs); err != nil {
			ck.report(nil, n.name, "plan", fmt.Sprintf("%s: requirements are incompatible with NodePool %s: %v", where, pool.Name, err))
		}
	}

	// Requests must be what the pods and the DaemonSets take.
	want := corev1.ResourceList{}
	for _, p := range c.Pods {
		if p != nil {
			addList(want, resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))
		}
	}
	addList(want, withoutPods(c.DaemonSetRequests))
	for _, name := range sortedNames(unionNames(want, withoutPods(c.Requests))) {
		got, exp := c.Requests[name], want[name]
		if got.Cmp(exp) != 0 {
			ck.report(nil, n.name, "plan", fmt.Sprintf("%s: requests %s %s, but its pods request %s plus DaemonSets %s = %s",
				where, name, fmtQ(name, got), fmtQ(name, sumPods(c.Pods, name)), fmtQ(name, c.DaemonSetRequests[name]), fmtQ(name, exp)))
		}
	}
	if got, ok := c.Requests[corev1.ResourcePods]; ok {
		ds := c.DaemonSetRequests[corev1.ResourcePods]
		if exp := int64(len(c.Pods)) + ds.Value(); got.Value() != exp {
			ck.report(nil, n.name, "plan", fmt.Sprintf("%s: requests %d pods, but it has %d pods plus %d DaemonSet pods", where, got.Value(), len(c.Pods), ds.Value()))
		}
	}

	if len(c.InstanceTypes) == 0 {
		ck.report(nil, n.name, "plan", where+": no instance types")
	}
	for _, it := range c.InstanceTypes {
		ck.checkClaimType(where, n.name, c, pool, it)
	}
}

// checkClaimPods: the claim's pods are, in order, the pods placed onto it,
// and there is at least one.
func (ck *checker) checkClaimPods(i int, c *solver.NewClaim, name string) {
	placed := ck.onClaim[i]
	if len(c.Pods) == 0 {
		ck.report(nil, name, "plan", fmt.Sprintf("NewClaims[%d] has no pods", i))
	}
	if len(placed) != len(c.Pods) {
		ck.report(nil, name, "plan", fmt.Sprintf("NewClaims[%d] lists %d pods but %d placements name it", i, len(c.Pods), len(placed)))
		return
	}
	for j := range placed {
		if !samePod(placed[j], c.Pods[j]) {
			ck.report(c.Pods[j], name, "plan", fmt.Sprintf("NewClaims[%d].Pods[%d] is %s, but placement #%d onto the claim is %s", i, j, podKey(c.Pods[j]), j, podKey(placed[j])))
			return
		}
	}
}

func samePod(a, b *corev1.Pod) bool {
	return a == b || a != nil && b != nil && podKey(a) == podKey(b)
}

// checkClaimType: the type must belong to the pool, meet the claim's
// requirements with an available offering they allow, and hold its requests.
func (ck *checker) checkClaimType(where, name string, c *solver.NewClaim, pool *solver.NodePool, it *instancetype.InstanceType) {
	if it == nil {
		ck.report(nil, name, "plan", where+": nil instance type")
		return
	}
	if pool != nil && !ck.poolHasType(pool, it) {
		ck.report(nil, name, "plan", fmt.Sprintf("%s: instance type %s is not one of NodePool %s's", where, it.Name, pool.Name))
	}
	if err := it.Requirements.Compatible(c.Requirements); err != nil {
		ck.report(nil, name, "plan", fmt.Sprintf("%s: instance type %s does not meet the claim's requirements: %v", where, it.Name, err))
	}
	if _, ok := it.Offerings.Cheapest(c.Requirements); !ok {
		ck.report(nil, name, "plan", fmt.Sprintf("%s: instance type %s has no available offering the claim's requirements allow", where, it.Name))
	}
	alloc := ck.allocatable(it)
	for _, res := range sortedNames(c.Requests) {
		need := c.Requests[res]
		if need.Sign() <= 0 {
			continue
		}
		if have := alloc[res]; have.Cmp(need) < 0 {
			ck.report(nil, name, "plan", fmt.Sprintf("%s: instance type %s has allocatable %s %s < the claim's requests %s",
				where, it.Name, res, fmtQ(res, have), fmtQ(res, need)))
		}
	}
}

func (ck *checker) poolHasType(pool *solver.NodePool, it *instancetype.InstanceType) bool {
	names, ok := ck.poolTypes[pool.Name]
	if !ok {
		names = map[string]bool{}
		for _, pt := range pool.InstanceTypes {
			if pt != nil {
				names[pt.Name] = true
			}
		}
		ck.poolTypes[pool.Name] = names
	}
	return names[it.Name]
}

// allocatable is it.Allocatable(), computed once per type: a claim lists up
// to hundreds of types, and thousands of claims list the same ones.
func (ck *checker) allocatable(it *instancetype.InstanceType) corev1.ResourceList {
	if a, ok := ck.allocs[it]; ok {
		return a
	}
	a := it.Allocatable()
	ck.allocs[it] = a
	return a
}

// checkLimits: when a plan launches nodes of a pool, the pool's usage plus the
// capacity of the type each of its new claims launches must stay within its
// limits; "nodes" counts nodes.
func (ck *checker) checkLimits() {
	for pi := range ck.in.NodePools {
		pool := &ck.in.NodePools[pi]
		if len(pool.Limits) == 0 {
			continue
		}
		total, claims := ck.poolCommitted(pool)
		nodes := pool.Usage[corev1.ResourceName("nodes")]
		if claims == 0 {
			// Usage over a limit (say, a limit lowered after the fact) is
			// not the plan's doing; only launching more would be.
			continue
		}
		for _, res := range sortedNames(pool.Limits) {
			limit := pool.Limits[res]
			if res == "nodes" {
				if got := nodes.Value() + int64(claims); got > limit.Value() {
					ck.report(nil, "", "limits", fmt.Sprintf("NodePool %s: %d existing + %d new nodes = %d > limit %d nodes",
						pool.Name, nodes.Value(), claims, got, limit.Value()))
				}
				continue
			}
			if got := total[res]; got.Cmp(limit) > 0 {
				used := pool.Usage[res]
				ck.report(nil, "", "limits", fmt.Sprintf("NodePool %s: %s usage %s + capacity of %d new claims = %s > limit %s",
					pool.Name, res, fmtQ(res, used), claims, fmtQ(res, got), fmtQ(res, limit)))
			}
		}
	}
}

// poolCommitted is the pool's usage plus the capacity of the type each of the
// plan's new claims of the pool launches, and how many such claims there are.
func (ck *checker) poolCommitted(pool *solver.NodePool) (corev1.ResourceList, int) {
	total := corev1.ResourceList{}
	addList(total, pool.Usage)
	claims := 0
	for i, c := range ck.plan.NewClaims {
		if c == nil || c.NodePool != pool.Name || ck.claims[i] == nil || ck.claims[i].launchType == nil {
			continue
		}
		addList(total, ck.claims[i].launchType.Capacity)
		claims++
	}
	return total, claims
}

func addList(dst, src corev1.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

func withoutPods(rl corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range rl {
		if name != corev1.ResourcePods {
			out[name] = q
		}
	}
	return out
}

func unionNames(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name := range a {
		out[name] = resource.Quantity{}
	}
	for name := range b {
		out[name] = resource.Quantity{}
	}
	return out
}

func sumPods(pods []*corev1.Pod, name corev1.ResourceName) resource.Quantity {
	var sum resource.Quantity
	for _, p := range pods {
		if p != nil {
			q := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[name]
			sum.Add(q)
		}
	}
	return sum
}

func fmtQ(name corev1.ResourceName, q resource.Quantity) string {
	return format(name, amount(name, q))
}

package solver

import (
	"math"

	corev1 "k8s.io/api/core/v1"
)

// Sizing a new NodeClaim.
//
// Placing pods one at a time and paying for each as little as possible opens
// a small node whenever the next step up costs more than a new small node,
// even when the pods still waiting would fill a large node at a lower price
// per pod (a node's reserved resources weigh less on a large one): the
// scale benchmark's 40,000 pods went onto 10,007 mostly 2- and 4-vCPU nodes
// at $332.88/h. So a new bin is opened for the type with the lowest price
// per pod of its group it can hold (counting at most the group's pods still
// to place), and the bin counts at that type's price until its pods outgrow
// it: pods of any group then fill it for nothing more. The same pods now go
// onto 802 nodes at $310.83/h. Growing a bin is weighed the same way, by its
// price rise per pod the larger type makes room for. A bin opened large and
// left part empty costs nothing extra: finish() lists only the types that
// hold the bin's pods, cheapest first, and that is what launches.

// option is growing a planned NodeClaim for a pod. perPod is its price
// rise divided by the pods of the group it makes room for, the figure a new
// NodeClaim is compared by.
type option struct {
	bin    int // index into s.bins; -1 when no NodeClaim can grow
	ch     choice
	perPod float64
}

// roomFor is how many pods of g fit in alloc beside what t already holds,
// capped at the pods of g still to place and at one per node when the group
// cannot share a node with itself (hostname anti-affinity or spread, host
// ports).
func (s *state) roomFor(g *group, t *target, alloc *vec) int64 {
	n := int64(len(g.pods))
	if n > 1 && g.onePerNode() {
		n = 1
	}
	return max(min(n, capacityFor(g, t, alloc)), 1) // the caller already checked that the pod fits
}

// capacityFor is how many pods of g fit in alloc beside what t already
// holds, however many there are to place.
func capacityFor(g *group, t *target, alloc *vec) int64 {
	n := int64(math.MaxInt64)
	for i := range g.req {
		if g.req[i] <= 0 {
			continue
		}
		if c := (alloc[i] - t.used[i]) / g.req[i]; c < n {
			n = c
		}
	}
	return n
}

// onePerNode reports whether at most one pod of the group goes on a node.
func (g *group) onePerNode() bool {
	if len(g.ports) > 0 {
		return true
	}
	for _, tg := range g.owned {
		if tg.key == corev1.LabelHostname && (tg.kind == antiAffinity || tg.kind == spread) {
			return true
		}
	}
	return false
}

// samePrice is how close two prices per pod must be to count as equal: they
// are quotients of prices, and linear price lists make exact ties common.
const samePrice = 1e-9

// chooseAim picks the type a new bin for one pod of g is opened for: the
// lowest price per pod of g it can hold; at the same price per pod, the type
// that takes more of them (fewer nodes, as Karpenter would launch). It
// returns the type's index in t.types and the price per pod, or -1, and
// whether it was chosen for too few pods (NewClaim.Short): it holds more of
// g's pods than are left to place, or another type would hold a full load
// of them for less a pod.
func (s *state) chooseAim(g *group, t *target, ch *choice) (int, float64, bool) {
	ok := s.typeOK(g, t.pool)
	pr := s.pricerFor(g, t, ch)
	need := t.used
	need.add(&g.req)
	best, bestPer, bestN, short := -1, math.Inf(1), int64(0), false
	k := float64(len(g.pods))
	for i, it := range t.types {
		// Types are cheapest first, and narrowing only raises a price: once
		// a type could not beat the best even holding all k pods, no later
		// one can.
		if t.prices[i]/k > bestPer*(1+samePrice) {
			break
		}
		if !ok[it.idx] {
			continue
		}
		if f, _ := fits(&need, &it.alloc); !f || !s.withinLimits(t, it) {
			continue
		}
		price, found := s.priceOf(t, i, ch, &pr)
		if !found {
			continue
		}
		n := s.roomFor(g, t, &it.alloc)
		per := price / float64(n)
		if per < bestPer*(1-samePrice) || (per <= bestPer*(1+samePrice) && n > bestN) {
			best, bestPer, bestN = i, per, n
		}
	}
	if best >= 0 && !g.onePerNode() {
		short = capacityFor(g, t, &t.types[best].alloc) > bestN || s.cheaperIfMore(g, t, ok, ch, &pr, &need, bestPer)
	}
	return best, bestPer, short
}

// cheaperIfMore reports whether some type would hold g's pods for less than
// per a pod were there as many of them as it has room for: the aim was
// chosen smaller (or larger) than more pods of g would have made it.
func (s *state) cheaperIfMore(g *group, t *target, ok []bool, ch *choice, pr *pricer, need *vec, per float64) bool {
	for i, it := range t.types {
		if !ok[it.idx] {
			continue
		}
		if f, _ := fits(need, &it.alloc); !f || !s.withinLimits(t, it) {
			continue
		}
		n := capacityFor(g, t, &it.alloc)
		// Narrowing only raises a price: a type that cannot beat per at
		// its pool price cannot under the pod's requirements either.
		if t.prices[i]/float64(n) >= per*(1-samePrice) {
			continue
		}
		if price, found := s.priceOf(t, i, ch, pr); found && price/float64(n) < per*(1-samePrice) {
			return true
		}
	}
	return false
}

// newBeatsGrowth reports whether a new bin at per a pod is to be preferred to
// growing grow's bin: when cheaper per pod, or as cheap and the bin holds
// pods of other groups.
func (s *state) newBeatsGrowth(g *group, per float64, grow *option) bool {
	if per < grow.perPod*(1-samePrice) {
		return true
	}
	t := s.bins[grow.bin]
	return per <= grow.perPod*(1+samePrice) && t.owner != g
}

// aimUnder prices the bin's aim under the choice: kept reports that the
// choice leaves the aim among the bin's types (the pod's requirements may
// rule it out), held that need still fits it.
func (s *state) aimUnder(g *group, t *target, need *vec, ch *choice, pr *pricer) (price float64, held, kept bool) {
	if !s.typeOK(g, t.pool)[t.aim.idx] {
		return 0, false, false
	}
	price, kept = s.priceOf(t, t.aimIdx, ch, pr)
	if !kept {
		return 0, false, false
	}
	f, _ := fits(need, &t.aim.alloc)
	return price, f && s.withinLimits(t, t.aim), true
}

// refreshAim finds the aim again after the bin's types changed, and drops it
// once it is gone from them or no longer holds the bin's pods.
func (t *target) refreshAim() {
	if t.aim == nil {
		return
	}
	for i, it := range t.types {
		if it != t.aim {
			continue
		}
		if f, _ := fits(&t.used, &it.alloc); f {
			t.aimIdx = i
			return
		}
		break
	}
	t.aim, t.aimIdx = nil, 0
}

// zeroRoom reports whether a pod of g might fit the bin at its current
// price: within its cheapest type or its aim.
func (t *target) zeroRoom(g *group) bool {
	return fitsSum(&t.used, &g.req, &t.types[0].alloc) || (t.aim != nil && fitsSum(&t.used, &g.req, &t.aim.alloc))
}

// setSlack records the bin's CPU and memory room at its current price in the
// dense array place() scans.
func (s *state) setSlack(t *target) {
	a := &t.types[0].alloc
	cpu, mem := a[0], a[1]
	if t.aim != nil {
		cpu, mem = max(cpu, t.aim.alloc[0]), max(mem, t.aim.alloc[1])
	}
	s.slack[t.claim] = [2]int64{cpu - t.used[0], mem - t.used[1]}
}

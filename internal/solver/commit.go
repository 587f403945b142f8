package solver

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// commit places p on t as ch says: narrows the bin, recomputes its types,
// counts the pod in every topology group that selects it, and records the
// placement.
func (s *state) commit(g *group, p *corev1.Pod, t *target, ch *choice) {
	if !t.existing {
		first := len(t.pods) == 0
		if first {
			t.owner = g
		} else if t.owner != g {
			t.owner = nil
		}
		s.commitBin(g, t, ch)
		if first {
			s.recordDaemons(t, 1)
		}
	} else {
		t.used.add(&g.req)
	}
	t.ports = append(t.ports, g.ports...)
	t.pods = append(t.pods, p)
	for _, tg := range g.counted {
		if v, ok := s.domainOf(t, tg.key, ch); ok && s.countsOn(tg, t) {
			tg.record(v)
		}
	}
	for _, tg := range g.owned {
		if tg.kind != antiAffinity || !tg.required {
			continue
		}
		if v, ok := s.domainOf(t, tg.key, ch); ok {
			tg.owners[v]++
		}
	}
	pl := Placement{Pod: p, NewClaim: -1}
	if t.existing {
		pl.Node = t.name
	} else {
		pl.NewClaim = t.claim
	}
	s.plan.Placements = append(s.plan.Placements, pl)
}

func (s *state) domainOf(t *target, key string, ch *choice) (string, bool) {
	if v, ok := ch.value(key); ok {
		return v, true
	}
	vals, _ := t.domainValues(key)
	if len(vals) == 1 {
		return vals[0], true
	}
	return "", false
}

func (s *state) commitBin(g *group, t *target, ch *choice) {
	narrowed, zoneOnly, zone := false, true, ""
	for i := 0; i < ch.n; i++ {
		if ch.narrow[i] {
			if ch.keys[i] == corev1.LabelTopologyZone {
				zone = ch.vals[i]
			} else {
				zoneOnly = false
			}
		}
		if ch.narrow[i] {
			t.reqs[ch.keys[i]] = scheduling.NewRequirement(ch.keys[i], corev1.NodeSelectorOpIn, ch.vals[i])
			narrowed = true
		}
	}
	if len(g.reqs) > 0 {
		if !subsumes(t.reqs, g.reqs) {
			t.reqs = t.reqs.Intersect(g.reqs)
			narrowed, zoneOnly = true, false
			if g.reqs.Has(corev1.LabelTopologyZone) || g.reqs.Has(instancetype.CapacityTypeLabel) {
				t.offersNarrowed = true
			}
		}
	}
	if narrowed {
		t.domains = nil
	}
	t.used.add(&g.req)
	if narrowed && zoneOnly && zone != "" && !t.offersNarrowed {
		s.filterTypesToZone(t, zone)
	} else if narrowed {
		s.filterTypes(g, t)
	} else {
		// Types only drop out by not fitting: drop them from the front, where
		// the price is decided; finish() filters the rest.
		for len(t.types) > 1 {
			if f, _ := fits(&t.used, &t.types[0].alloc); f && s.withinLimits(t, t.types[0]) {
				break
			}
			t.types, t.prices = t.types[1:], t.prices[1:]
		}
	}
	if len(t.pods) == 0 {
		t.pool.remainingNodes--
	}
	cur := &t.types[0].capacity
	for i := range t.pool.limited {
		if t.pool.limited[i] {
			t.pool.remaining[i] -= cur[i] - t.reserved[i]
		}
	}
	t.reserved = *cur
	t.refreshAim()
	s.setSlack(t)
}

// filterTypes keeps the bin's types that the group allows, that hold what
// the bin uses, that stay within limits and that have an offering its
// requirements allow, repriced and cheapest first.
func (s *state) filterTypes(g *group, t *target) {
	ok := s.typeOK(g, t.pool)
	types := make([]*itype, 0, len(t.types))
	prices := make([]float64, 0, len(t.types))
	for _, it := range t.types {
		if !ok[it.idx] {
			continue
		}
		if f, _ := fits(&t.used, &it.alloc); !f || !s.withinLimits(t, it) {
			continue
		}
		if it.it.Requirements.Compatible(t.reqs) != nil {
			continue
		}
		o, found := it.it.Offerings.Cheapest(t.reqs)
		if !found {
			continue
		}
		types, prices = append(types, it), append(prices, o.Price)
	}
	t.types, t.prices = types, prices
	sortByPrice(t)
	t.setAvail()
}

// filterTypesToZone is filterTypes when only the zone narrowed: the price
// per zone is known, and nothing else about the types changed.
func (s *state) filterTypesToZone(t *target, zone string) {
	types := make([]*itype, 0, len(t.types))
	prices := make([]float64, 0, len(t.types))
	for _, it := range t.types {
		p, ok := it.zonePrice[zone]
		if !ok {
			continue
		}
		if f, _ := fits(&t.used, &it.alloc); !f || !s.withinLimits(t, it) {
			continue
		}
		types, prices = append(types, it), append(prices, p)
	}
	t.types, t.prices = types, prices
	sortByPrice(t)
	t.setAvail()
}

// subsumes reports whether every requirement of b is already implied by a,
// so intersecting would change nothing (the common case for pods whose
// requirements their bin already has).
func subsumes(a, b scheduling.Requirements) bool {
	for k, rb := range b {
		ra, ok := a[k]
		if !ok || ra.Complement() {
			return false
		}
		for _, v := range ra.Values() {
			if !rb.Has(v) {
				return false
			}
		}
	}
	return true
}

// maxClaimTypes bounds the instance types a NewClaim lists.
const maxClaimTypes = 60

// finish turns the bins into NewClaims.
func (s *state) finish() {
	for _, t := range s.bins {
		// Drop the types that stopped fitting along the way.
		types, prices := t.types[:0:0], t.prices[:0:0]
		for i, it := range t.types {
			if f, _ := fits(&t.used, &it.alloc); f {
				types, prices = append(types, it), append(prices, t.prices[i])
			}
		}
		t.types, t.prices = types, prices
		// Like Karpenter, offer the cheapest few: enough to fall back on when
		// an offering runs out, few enough for a readable NodeClaim.
		if len(t.types) > maxClaimTypes && minValuesMet(t.pool.minValues, t.types[:maxClaimTypes]) {
			t.types, t.prices = t.types[:maxClaimTypes], t.prices[:maxClaimTypes]
		}
		reqs := t.reqs.Copy()
		names := make([]string, len(t.types))
		for i, it := range t.types {
			names[i] = it.it.Name
		}
		reqs.Add(scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...))
		var relaxed *bool
		if s.bestEffort && len(t.pool.minValues) > 0 {
			r := relaxMinValues(t.pool.minValues, t.types, reqs)
			relaxed = &r
		}
		c := &NewClaim{
			MinValuesRelaxed:  relaxed,
			NodePool:          t.pool.np.Name,
			Requirements:      reqs,
			Pods:              t.pods,
			Requests:          s.ri.list(t.used),
			DaemonSetRequests: s.ri.list(t.daemon),
			Hostname:          t.name,
		}
		for _, it := range t.types {
			c.InstanceTypes = append(c.InstanceTypes, it.it)
		}
		if t.aim != nil {
			c.Aim, c.Short = t.aim.it, t.aimShort
		}
		s.plan.NewClaims = append(s.plan.NewClaims, c)
	}
}

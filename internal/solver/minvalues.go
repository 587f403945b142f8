package solver

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// minValuesOK reports whether a bin that takes a pod needing `need` under the
// choice would still offer, for every requirement of the pool with minValues,
// at least that many distinct values among its instance types: a NodeClaim
// must stay that flexible (e.g. 3 instance families, for spot).
func (s *state) minValuesOK(g *group, t *target, need *vec, ch *choice) bool {
	if len(t.pool.minValues) == 0 || g.minValuesRelaxed {
		return true
	}
	ok := s.typeOK(g, t.pool)
	zone, narrowZone := ch.narrowed(corev1.LabelTopologyZone)
	var kept []*itype
	for _, it := range t.types {
		if !ok[it.idx] {
			continue
		}
		if f, _ := fits(need, &it.alloc); !f || !s.withinLimits(t, it) {
			continue
		}
		if narrowZone || ch.narrowsOther() {
			if _, found := s.narrowedPrice(t, it, ch, zone, narrowZone); !found {
				continue
			}
		}
		kept = append(kept, it)
	}
	return minValuesMet(t.pool.minValues, kept)
}

func minValuesMet(mvs []minValue, types []*itype) bool {
	for _, mv := range mvs {
		if distinctValues(mv.key, types) < mv.min {
			return false
		}
	}
	return true
}

// distinctValues counts the values of key the types offer among them.
func distinctValues(key string, types []*itype) int {
	seen := map[string]bool{}
	for _, it := range types {
		if key == corev1.LabelInstanceTypeStable {
			seen[it.it.Name] = true
			continue
		}
		if r, ok := it.it.Requirements[key]; ok && !r.Complement() {
			for _, v := range r.Values() {
				seen[v] = true
			}
		}
	}
	return len(seen)
}

// relaxMinValues lowers, under BestEffort, each minValues a claim's types
// no longer meet to the number of values they do offer, and reports
// whether any was lowered.
func relaxMinValues(mvs []minValue, types []*itype, reqs scheduling.Requirements) bool {
	relaxed := false
	for _, mv := range mvs {
		n := distinctValues(mv.key, types)
		if n >= mv.min {
			continue
		}
		if r, ok := reqs[mv.key]; ok {
			reqs[mv.key] = r.WithMinValues(&n)
			relaxed = true
		}
	}
	return relaxed
}

package kubescheduler

import (
	"math"

	corev1 "k8s.io/api/core/v1"
)

// hardPodAffinityWeight is InterPodAffinity's default weight for an
// existing pod's required affinity terms that the incoming pod matches.
const hardPodAffinityWeight = 1

type topologyPair struct{ key, value string }

// interFilter is InterPodAffinity's PreFilter state: pods matching the
// incoming pod's required terms per domain, and the domains existing
// pods' required anti-affinity keeps it out of.
type interFilter struct {
	affinity, anti, existingAnti map[topologyPair]int
}

func (c *cycle) preFilterInterPod() *interFilter {
	s, pi := c.s, c.pi
	f := &interFilter{affinity: map[topologyPair]int{}, anti: map[topologyPair]int{}, existingAnti: map[topologyPair]int{}}
	for _, ep := range s.withAffinity {
		node := s.nodes[ep.node].node
		for _, t := range ep.reqAnti {
			if v, ok := node.Labels[t.topologyKey]; ok && t.m.matches(pi, s.nsLabels) {
				f.existingAnti[topologyPair{t.topologyKey, v}]++
			}
		}
	}
	if len(pi.reqAffinity) > 0 {
		// A pod counts only when it matches every required affinity term.
		var clauses []clause
		for _, t := range pi.reqAffinity {
			clauses = append(clauses, t.m.clauses...)
		}
		c.addCounts(f.affinity, newMatcher(clauses...), pi.reqAffinity)
	}
	for _, t := range pi.reqAnti {
		c.addCounts(f.anti, t.m, []affinityTerm{t})
	}
	if len(pi.reqAffinity)+len(pi.reqAnti) == 0 && len(f.existingAnti) == 0 {
		return nil
	}
	return f
}

// addCounts adds, for each term's topology key, the pods m matches to
// their node's domain.
func (c *cycle) addCounts(into map[topologyPair]int, m *matcher, terms []affinityTerm) {
	per := c.s.countsFor(m)
	for i, n := range c.s.nodes {
		if per[i] == 0 {
			continue
		}
		for _, t := range terms {
			if v, ok := n.node.Labels[t.topologyKey]; ok {
				into[topologyPair{t.topologyKey, v}] += per[i]
			}
		}
	}
}

func (f *interFilter) filter(pi *podInfo, node *corev1.Node) string {
	if len(pi.reqAffinity) > 0 {
		exist := true
		for _, t := range pi.reqAffinity {
			v, ok := node.Labels[t.topologyKey]
			if !ok {
				return ReasonPodAffinity
			}
			if f.affinity[topologyPair{t.topologyKey, v}] <= 0 {
				exist = false
			}
		}
		// The first pod of a group with affinity to itself may go
		// anywhere its topology keys are.
		if !exist && (len(f.affinity) > 0 || !matchesAll(pi)) {
			return ReasonPodAffinity
		}
	}
	for _, t := range pi.reqAnti {
		if v, ok := node.Labels[t.topologyKey]; ok && f.anti[topologyPair{t.topologyKey, v}] > 0 {
			return ReasonPodAntiAffinity
		}
	}
	if len(f.existingAnti) > 0 {
		for k, v := range node.Labels {
			if f.existingAnti[topologyPair{k, v}] > 0 {
				return ReasonExistingAntiAffy
			}
		}
	}
	return ""
}

// matchesAll reports whether the pod matches its own required affinity
// terms. Namespace selectors are not consulted, as in kube-scheduler.
func matchesAll(pi *podInfo) bool {
	for _, t := range pi.reqAffinity {
		if !t.m.matches(pi, nil) {
			return false
		}
	}
	return true
}

// interPodScores are InterPodAffinity's normalized scores for the
// feasible nodes, nil when no term applies: the incoming pod's preferred
// terms and existing pods' required (at weight 1) and preferred terms add
// or take their weight for every node in the domain of the pods they
// match.
func (c *cycle) interPodScores(feasible []int) []int64 {
	s, pi := c.s, c.pi
	topo := map[topologyPair]int64{}
	add := func(terms []weightedTerm, sign int64) {
		for _, t := range terms {
			per := s.countsFor(t.m)
			for i, n := range s.nodes {
				if v, ok := n.node.Labels[t.topologyKey]; ok && per[i] > 0 {
					topo[topologyPair{t.topologyKey, v}] += sign * t.weight * int64(per[i])
				}
			}
		}
	}
	add(pi.prefAffinity, 1)
	add(pi.prefAnti, -1)
	for _, ep := range s.withAffinity {
		node := s.nodes[ep.node].node
		credit := func(t affinityTerm, w int64) {
			if v, ok := node.Labels[t.topologyKey]; ok && t.m.matches(pi, s.nsLabels) {
				topo[topologyPair{t.topologyKey, v}] += w
			}
		}
		for _, t := range ep.reqAffinity {
			credit(t, hardPodAffinityWeight)
		}
		for _, t := range ep.prefAffinity {
			credit(t.affinityTerm, t.weight)
		}
		for _, t := range ep.prefAnti {
			credit(t.affinityTerm, -t.weight)
		}
	}
	if len(topo) == 0 {
		return nil
	}
	keys := map[string]bool{}
	for p := range topo {
		keys[p.key] = true
	}
	scores := make([]int64, len(feasible))
	var lo, hi int64 = math.MaxInt64, math.MinInt64
	for j, i := range feasible {
		labels := s.nodes[i].node.Labels
		for k := range keys {
			if v, ok := labels[k]; ok {
				scores[j] += topo[topologyPair{k, v}]
			}
		}
		lo, hi = min(lo, scores[j]), max(hi, scores[j])
	}
	for j := range scores {
		if hi > lo {
			scores[j] = int64(float64(maxScore) * float64(scores[j]-lo) / float64(hi-lo))
		} else {
			scores[j] = 0
		}
	}
	return scores
}

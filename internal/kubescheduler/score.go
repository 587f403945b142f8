package kubescheduler

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// maxScore is framework.MaxNodeScore: every plugin's normalized scores
// fall in 0..maxScore before they are weighted.
const maxScore = 100

// The default profile's score plugin weights (kube-scheduler v1.34).
const (
	weightTaintToleration   = 3
	weightNodeAffinity      = 2
	weightPodTopologySpread = 2
	weightInterPodAffinity  = 2
	weightFit               = 1
	weightBalanced          = 1
)

// leastAllocated is NodeResourcesFit's score with the LeastAllocated
// strategy and cpu and memory weighted 1 each: the share of the node left
// free once the pod is on it, counting kube-scheduler's default requests
// for containers that set none.
func leastAllocated(n *nodeInfo, pi *podInfo) int64 {
	var sum, weights int64
	for _, r := range [][2]int64{
		{n.nonZero.cpu + pi.nonZero.cpu, n.alloc.cpu},
		{n.nonZero.mem + pi.nonZero.mem, n.alloc.mem},
	} {
		requested, capacity := r[0], r[1]
		if capacity == 0 {
			continue
		}
		weights++
		if requested <= capacity {
			sum += (capacity - requested) * maxScore / capacity
		}
	}
	if weights == 0 {
		return 0
	}
	return sum / weights
}

// balancedAllocation is NodeResourcesBalancedAllocation's score: 100 less
// the standard deviation of the cpu and memory fractions the node would
// have requested, in percent. A pod that requests neither is skipped
// (every node scores 0), as kube-scheduler does since v1.32 so that
// best-effort pods do not pile onto one node.
func balancedAllocation(n *nodeInfo, pi *podInfo) int64 {
	if pi.req.cpu == 0 && pi.req.mem == 0 {
		return 0
	}
	if n.alloc.cpu == 0 || n.alloc.mem == 0 {
		return maxScore // one fraction or none: no deviation
	}
	cpu := math.Min(float64(n.req.cpu+pi.req.cpu)/float64(n.alloc.cpu), 1)
	mem := math.Min(float64(n.req.mem+pi.req.mem)/float64(n.alloc.mem), 1)
	std := math.Abs((cpu - mem) / 2)
	return int64((1 - std) * maxScore)
}

// taintScores is TaintToleration's score: the PreferNoSchedule taints the
// pod does not tolerate, fewer scoring higher.
func (c *cycle) taintScores(feasible []int) []int64 {
	var tols []corev1.Toleration
	for _, t := range c.pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == corev1.TaintEffectPreferNoSchedule {
			tols = append(tols, t)
		}
	}
	scores := make([]int64, len(feasible))
	for j, i := range feasible {
		for _, t := range c.s.nodes[i].node.Spec.Taints {
			if t.Effect == corev1.TaintEffectPreferNoSchedule && !corev1helpers.TolerationsTolerateTaint(tols, &t) {
				scores[j]++
			}
		}
	}
	return normalize(scores, true)
}

// nodeAffinityScores is NodeAffinity's score: the summed weights of the
// pod's preferred node affinity terms a node matches; nil when it has
// none.
func (c *cycle) nodeAffinityScores(feasible []int) []int64 {
	a := c.pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return nil
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return nil
	}
	scores := make([]int64, len(feasible))
	for j, i := range feasible {
		scores[j] = terms.Score(c.s.nodes[i].node)
	}
	return normalize(scores, false)
}

// normalize is the framework's DefaultNormalizeScore: scale so that the
// highest is 100, and with reverse turn it around so the lowest is.
func normalize(scores []int64, reverse bool) []int64 {
	var hi int64
	for _, s := range scores {
		hi = max(hi, s)
	}
	for j, s := range scores {
		switch {
		case hi == 0 && reverse:
			scores[j] = maxScore
		case hi == 0:
			scores[j] = 0
		case reverse:
			scores[j] = maxScore - maxScore*s/hi
		default:
			scores[j] = maxScore * s / hi
		}
	}
	return scores
}

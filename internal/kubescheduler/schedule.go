package kubescheduler

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// Decision is where kube-scheduler would bind a pod.
type Decision struct {
	// Node is the chosen node, "" when none fits.
	Node string
	// Nodes is how many nodes were considered, Feasible how many passed
	// the filters.
	Nodes, Feasible int
	// Reasons counts the nodes filtered out by the reasons of the first
	// filter each failed (NodeResourcesFit names every resource short).
	Reasons map[string]int
}

// Message is the PodScheduled condition's message kube-scheduler writes
// for a pod it could not place.
func (d Decision) Message() string {
	reasons := make([]string, 0, len(d.Reasons))
	for r, n := range d.Reasons {
		reasons = append(reasons, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(reasons)
	msg := fmt.Sprintf("0/%d nodes are available", d.Nodes)
	if len(reasons) > 0 {
		msg += ": " + strings.Join(reasons, ", ")
	}
	return msg + "."
}

// Schedule is one scheduling cycle of the default profile for pod over
// the snapshot: filter every node, score the feasible ones, and take the
// highest weighted sum. It does not bind; call Assume for that.
func (s *Snapshot) Schedule(pod *corev1.Pod) Decision {
	d := Decision{Nodes: len(s.nodes)}
	if len(s.nodes) == 0 {
		return d
	}
	c := newCycle(s, pod)
	var feasible []int
	for i := range s.nodes {
		if rs := c.filter(i); len(rs) > 0 {
			if d.Reasons == nil {
				d.Reasons = map[string]int{}
			}
			for _, r := range rs {
				d.Reasons[r]++
			}
			continue
		}
		feasible = append(feasible, i)
	}
	d.Feasible = len(feasible)
	if len(feasible) == 0 {
		return d
	}
	if len(feasible) == 1 {
		d.Node = s.nodes[feasible[0]].node.Name
		return d
	}
	total := c.scores(feasible)
	best, hashed := 0, false
	var bestHash uint64
	for j := 1; j < len(feasible); j++ {
		switch {
		case total[j] > total[best]:
			best, hashed = j, false
		case total[j] == total[best]:
			if !hashed {
				bestHash, hashed = tieHash(pod, s.nodes[feasible[best]].node.Name), true
			}
			if h := tieHash(pod, s.nodes[feasible[j]].node.Name); h < bestHash {
				best, bestHash = j, h
			}
		}
	}
	d.Node = s.nodes[feasible[best]].node.Name
	return d
}

// scores is every score plugin's normalized score times its weight,
// summed per feasible node.
func (c *cycle) scores(feasible []int) []int64 {
	total := make([]int64, len(feasible))
	addAll := func(scores []int64, weight int64) {
		for j, v := range scores {
			total[j] += v * weight
		}
	}
	for j, i := range feasible {
		n := c.s.nodes[i]
		total[j] += weightFit*leastAllocated(n, c.pi) + weightBalanced*balancedAllocation(n, c.pi)
	}
	addAll(c.taintScores(feasible), weightTaintToleration)
	addAll(c.nodeAffinityScores(feasible), weightNodeAffinity)
	addAll(c.spreadScores(feasible), weightPodTopologySpread)
	addAll(c.interPodScores(feasible), weightInterPodAffinity)
	return total
}

// tieHash orders nodes of equal score for a pod. kube-scheduler picks one
// of them at random; a hash keeps runs repeatable without favouring nodes
// by name, as taking the first would.
func tieHash(pod *corev1.Pod, node string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(pod.UID))
	h.Write([]byte{0})
	h.Write([]byte(pod.Namespace + "/" + pod.Name))
	h.Write([]byte{0})
	h.Write([]byte(node))
	return h.Sum64()
}

// Less is the default profile's queue order (PrioritySort): higher
// priority first, then the earlier created; name breaks what is left so
// the order is stable.
func Less(a, b *corev1.Pod) bool {
	pa, pb := corev1helpers.PodPriority(a), corev1helpers.PodPriority(b)
	if pa != pb {
		return pa > pb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

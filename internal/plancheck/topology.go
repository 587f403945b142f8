package plancheck

import (
	"fmt"
	"maps"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// spreadCounter counts, per node, the bound pods of one namespace that one
// selector matches. Spread constraints of many pods share a few selectors, so
// counting once per bind is much cheaper than counting per check.
type spreadCounter struct {
	namespace string
	selector  labels.Selector
	perNode   []int
}

// add counts bp if the counter's selector takes it. Terminating pods do not
// count, as in kube-scheduler's PodTopologySpread.
func (c *spreadCounter) add(bp *boundPod) {
	if bp.pod.Namespace == c.namespace && bp.pod.DeletionTimestamp == nil && c.selector.Matches(bp.labels) {
		c.perNode[bp.node.idx]++
	}
}

// counter returns the counter for a namespace and selector, counting the pods
// bound so far when it is new. Counters are made during the replay, once the
// node set is final, so perNode has a slot for every node.
func (ix *podIndex) counter(namespace string, sel labels.Selector) *spreadCounter {
	id := namespace + "\x00" + sel.String()
	if c, ok := ix.counters[id]; ok {
		return c
	}
	c := &spreadCounter{namespace: namespace, selector: sel, perNode: make([]int, len(ix.ck.nodes))}
	for _, bp := range ix.all {
		c.add(bp)
	}
	ix.counters[id] = c
	return c
}

// domainTable numbers the values of one label key over the final node set.
// The node set does not change during the replay, so it is built once per
// key, and a spread check then counts into a slice instead of a map.
type domainTable struct {
	values []string // sorted
	ofNode []int    // domain of each node, -1 when the node lacks the key
}

func (ix *podIndex) domains(key string) *domainTable {
	if t, ok := ix.tables[key]; ok {
		return t
	}
	seen := map[string]bool{}
	for _, m := range ix.ck.nodes {
		if v, ok := m.labels()[key]; ok {
			seen[v] = true
		}
	}
	t := &domainTable{values: slices.Sorted(maps.Keys(seen)), ofNode: make([]int, len(ix.ck.nodes))}
	for i, m := range ix.ck.nodes {
		t.ofNode[i] = -1
		if v, ok := m.labels()[key]; ok {
			t.ofNode[i], _ = slices.BinarySearch(t.values, v)
		}
	}
	ix.tables[key] = t
	return t
}

// spreadSelector is the constraint's selector with the pod's own values for
// matchLabelKeys, as the API server merges them; nil matches nothing.
func spreadSelector(p *corev1.Pod, c corev1.TopologySpreadConstraint) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
	if err != nil {
		return nil, err
	}
	for _, k := range c.MatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			r, err := labels.NewRequirement(k, selection.Equals, []string{v})
			if err != nil {
				return nil, err
			}
			sel = sel.Add(*r)
		}
	}
	return sel, nil
}

// checkTopologySpread is kube-scheduler's PodTopologySpread filter for the
// pod's DoNotSchedule constraints (ScheduleAnyway only scores).
//
// For each constraint: the eligible nodes are those that carry the keys of
// all the pod's hard constraints and pass the constraint's node inclusion
// policies (nodeAffinityPolicy, Honor by default: the pod's required node
// affinity and nodeSelector; nodeTaintsPolicy, Ignore by default: the
// pod's tolerations). Their values of the key are the domains, each counting
// the bound pods of the pod's namespace that the selector matches. The pod
// may go to the node if count(node's domain) + 1 if it matches itself -
// min over domains ≤ maxSkew, where the minimum is 0 when there are fewer
// domains than minDomains.
func (ck *checker) checkTopologySpread(p *corev1.Pod, n *node) {
	var hard []corev1.TopologySpreadConstraint
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			hard = append(hard, c)
		}
	}
	if len(hard) == 0 {
		return
	}
	nodeAffinity := nodeaffinity.GetRequiredNodeAffinity(p)
	for _, c := range hard {
		sel, err := spreadSelector(p, c)
		if err != nil {
			ck.report(p, n.name, "topology-spread", fmt.Sprintf("constraint on %s cannot be parsed: %v", c.TopologyKey, err))
			continue
		}
		value, ok := n.labels()[c.TopologyKey]
		if !ok {
			ck.report(p, n.name, "topology-spread", fmt.Sprintf("node has no label %s, the topology key of a DoNotSchedule spread constraint", c.TopologyKey))
			continue
		}
		counter := ck.index.counter(p.Namespace, sel)
		dom := ck.index.domains(c.TopologyKey)
		counts := make([]int, len(dom.values))
		eligible := make([]bool, len(dom.values))
		for _, m := range ck.nodes {
			if !hasKeys(ck.index, m, hard) || !included(p, c, m, nodeAffinity) {
				continue
			}
			d := dom.ofNode[m.idx]
			eligible[d] = true
			counts[d] += counter.perNode[m.idx]
		}
		// Domains are numbered in name order, so ties go to the smallest name.
		domains, minCount, minDomain := 0, math.MaxInt, ""
		for d, ok := range eligible {
			if !ok {
				continue
			}
			domains++
			if counts[d] < minCount {
				minCount, minDomain = counts[d], dom.values[d]
			}
		}
		here := counts[dom.ofNode[n.idx]]
		// minDomains defaults to 1, so no eligible domain at all gives min 0.
		minDomains := int32(1)
		if c.MinDomains != nil {
			minDomains = *c.MinDomains
		}
		minWhy := fmt.Sprintf("min %d in %s=%s over %d domains", minCount, c.TopologyKey, minDomain, domains)
		if int32(domains) < minDomains || domains == 0 {
			minCount = 0
			minWhy = fmt.Sprintf("min 0 as only %d domains < minDomains %d", domains, minDomains)
		}
		self := 0
		if sel.Matches(labels.Set(p.Labels)) {
			self = 1
		}
		if skew := here + self - minCount; skew > int(c.MaxSkew) {
			ck.report(p, n.name, "topology-spread", fmt.Sprintf("spread on %s (maxSkew %d, selector %q): %s=%s has %d matching pods + %d self - %s = skew %d > maxSkew %d",
				c.TopologyKey, c.MaxSkew, sel.String(), c.TopologyKey, value, here, self, minWhy, skew, c.MaxSkew))
		}
	}
}

// hasKeys: kube-scheduler ignores, for every constraint, nodes that lack the
// key of any of the pod's hard constraints.
func hasKeys(ix *podIndex, m *node, cs []corev1.TopologySpreadConstraint) bool {
	for _, c := range cs {
		if ix.domains(c.TopologyKey).ofNode[m.idx] < 0 {
			return false
		}
	}
	return true
}

// included applies the constraint's node inclusion policies to node m.
func included(p *corev1.Pod, c corev1.TopologySpreadConstraint, m *node, nodeAffinity nodeaffinity.RequiredNodeAffinity) bool {
	if c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor {
		if ok, err := nodeAffinity.Match(m.obj); err != nil || !ok {
			return false
		}
	}
	if c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(m.obj.Spec.Taints, p.Spec.Tolerations, blocksScheduling); untolerated {
			return false
		}
	}
	return true
}

package kubescheduler

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// spreadConstraint is a topology spread constraint of the pod being
// scheduled, with its selector scoped to the pod's namespace.
type spreadConstraint struct {
	key                 string
	maxSkew, minDomains int32
	m                   *matcher
	selfMatch           bool
	// The node inclusion policies: nodeAffinityPolicy defaults to Honor,
	// nodeTaintsPolicy to Ignore.
	honorAffinity, honorTaints bool
}

// defaultSpread is kube-scheduler's system default constraints, used for a
// pod that sets none: ScheduleAnyway, over hostnames with maxSkew 3 and
// zones with maxSkew 5.
var defaultSpread = []corev1.TopologySpreadConstraint{
	{TopologyKey: corev1.LabelHostname, MaxSkew: 3, WhenUnsatisfiable: corev1.ScheduleAnyway},
	{TopologyKey: corev1.LabelTopologyZone, MaxSkew: 5, WhenUnsatisfiable: corev1.ScheduleAnyway},
}

// spreadConstraints are the pod's constraints of one kind.
func (c *cycle) spreadConstraints(when corev1.UnsatisfiableConstraintAction) []spreadConstraint {
	var out []spreadConstraint
	for _, t := range c.pod.Spec.TopologySpreadConstraints {
		if t.WhenUnsatisfiable != when {
			continue
		}
		sel, key := selectorOf(t.LabelSelector, c.pod.Labels, t.MatchLabelKeys, nil)
		out = append(out, c.newConstraint(t, sel, key))
	}
	return out
}

// defaultSpreadConstraints are the system defaults for a pod without
// constraints whose owners select it; none otherwise.
func (c *cycle) defaultSpreadConstraints() []spreadConstraint {
	if len(c.pod.Spec.TopologySpreadConstraints) > 0 || c.s.opts.DefaultSpreadSelector == nil {
		return nil
	}
	sel := c.s.opts.DefaultSpreadSelector(c.pod)
	if sel == nil || sel.Empty() {
		return nil
	}
	var out []spreadConstraint
	for _, t := range defaultSpread {
		out = append(out, c.newConstraint(t, sel, "default:"+sel.String()))
	}
	return out
}

func (c *cycle) newConstraint(t corev1.TopologySpreadConstraint, sel labels.Selector, selKey string) spreadConstraint {
	sc := spreadConstraint{key: t.TopologyKey, maxSkew: t.MaxSkew, minDomains: 1,
		m:             newMatcher(clause{namespaces: map[string]bool{c.pod.Namespace: true}, nsSel: labels.Nothing(), nsKey: "<none>", sel: sel, selKey: selKey}),
		selfMatch:     sel.Matches(c.pi.labels),
		honorAffinity: t.NodeAffinityPolicy == nil || *t.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
		honorTaints:   t.NodeTaintsPolicy != nil && *t.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor}
	if t.MinDomains != nil {
		sc.minDomains = *t.MinDomains
	}
	return sc
}

// includes is MatchNodeInclusionPolicies: whether node i's pods count
// towards the constraint.
func (c *cycle) includes(sc *spreadConstraint, i int) bool {
	if sc.honorAffinity && !c.matchesAffinity(i) {
		return false
	}
	return !sc.honorTaints || untoleratedTaint(c.s.nodes[i].node.Spec.Taints, c.pod.Spec.Tolerations) == nil
}

func hasKeys(node *corev1.Node, cs []spreadConstraint) bool {
	for i := range cs {
		if _, ok := node.Labels[cs[i].key]; !ok {
			return false
		}
	}
	return true
}

// spreadFilter is PodTopologySpread's PreFilter state for DoNotSchedule
// constraints: matching pods per domain, and the smallest count.
type spreadFilter struct {
	cs     []spreadConstraint
	counts []map[string]int
	min    []int
}

func (c *cycle) preFilterSpread() *spreadFilter {
	cs := c.spreadConstraints(corev1.DoNotSchedule)
	if len(cs) == 0 {
		return nil
	}
	f := &spreadFilter{cs: cs, counts: make([]map[string]int, len(cs)), min: make([]int, len(cs))}
	per := make([][]int, len(cs))
	for k := range cs {
		f.counts[k] = map[string]int{}
		per[k] = c.s.countsFor(cs[k].m)
	}
	for i, n := range c.s.nodes {
		if !hasKeys(n.node, cs) {
			continue
		}
		for k := range cs {
			if c.includes(&cs[k], i) {
				f.counts[k][n.node.Labels[cs[k].key]] += per[k][i]
			}
		}
	}
	for k := range cs {
		f.min[k] = math.MaxInt32
		for _, v := range f.counts[k] {
			f.min[k] = min(f.min[k], v)
		}
	}
	return f
}

// filter admits a node when placing the pod there keeps every
// constraint's skew (matching pods in the node's domain, plus the pod,
// minus the smallest domain's) within maxSkew. Fewer domains than
// minDomains make the smallest count zero.
func (f *spreadFilter) filter(c *cycle, node *corev1.Node) string {
	for k := range f.cs {
		sc := &f.cs[k]
		v, ok := node.Labels[sc.key]
		if !ok {
			return ReasonSpreadLabel
		}
		least := f.min[k]
		if int32(len(f.counts[k])) < sc.minDomains {
			least = 0
		}
		self := 0
		if sc.selfMatch {
			self = 1
		}
		if f.counts[k][v]+self-least > int(sc.maxSkew) {
			return ReasonSpread
		}
	}
	return ""
}

// spreadScores are PodTopologySpread's normalized scores for the feasible
// nodes, nil when the plugin skips the pod: fewer matching pods in a
// node's domains, weighted by the log of the number of domains, score
// higher.
func (c *cycle) spreadScores(feasible []int) []int64 {
	cs := c.spreadConstraints(corev1.ScheduleAnyway)
	requireAll := len(c.pod.Spec.TopologySpreadConstraints) > 0
	if len(cs) == 0 && !requireAll {
		cs = c.defaultSpreadConstraints()
	}
	if len(cs) == 0 {
		return nil
	}
	// Domains other than hostnames: those of the feasible nodes, with
	// the matching pods of every node counted in. A node without the key
	// falls in a domain of its own when the constraints are the system
	// defaults, as kube-scheduler counts it under the empty value.
	type domains struct {
		idx  *domainIndex
		seen []bool
		cnt  []int
	}
	ds := make([]domains, len(cs))
	per := make([][]int, len(cs))
	for k := range cs {
		per[k] = c.s.countsFor(cs[k].m)
		if cs[k].key != corev1.LabelHostname {
			d := c.s.domainsOf(cs[k].key)
			ds[k] = domains{idx: d, seen: make([]bool, d.missing+1), cnt: make([]int, d.missing+1)}
		}
	}
	ignored := make([]bool, len(c.s.nodes))
	size, nIgnored := make([]int, len(cs)), 0
	for _, i := range feasible {
		if requireAll && !hasKeys(c.s.nodes[i].node, cs) {
			ignored[i] = true
			nIgnored++
			continue
		}
		for k := range cs {
			if d := &ds[k]; d.idx != nil && !d.seen[d.idx.byNode[i]] {
				d.seen[d.idx.byNode[i]] = true
				size[k]++
			}
		}
	}
	weights := make([]float64, len(cs))
	for k := range cs {
		if cs[k].key == corev1.LabelHostname {
			size[k] = len(feasible) - nIgnored
		}
		weights[k] = math.Log(float64(size[k] + 2))
	}
	for i, n := range c.s.nodes {
		if requireAll && !hasKeys(n.node, cs) {
			continue
		}
		for k := range cs {
			d := &ds[k]
			if d.idx == nil || !d.seen[d.idx.byNode[i]] || !c.includes(&cs[k], i) {
				continue
			}
			d.cnt[d.idx.byNode[i]] += per[k][i]
		}
	}
	scores := make([]int64, len(feasible))
	for j, i := range feasible {
		if ignored[i] {
			continue
		}
		var score float64
		for k := range cs {
			cnt := per[k][i]
			if d := &ds[k]; d.idx != nil {
				if d.idx.byNode[i] == d.idx.missing {
					continue
				}
				cnt = d.cnt[d.idx.byNode[i]]
			} else if _, ok := c.s.nodes[i].node.Labels[cs[k].key]; !ok {
				continue
			}
			score += float64(cnt)*weights[k] + float64(cs[k].maxSkew-1)
		}
		scores[j] = int64(math.Round(score))
	}
	return normalizeSpread(feasible, scores, ignored)
}

// normalizeSpread maps raw scores to 0-100, the lowest raw score highest;
// ignored nodes (missing a key the pod's own constraints need) score 0.
func normalizeSpread(feasible []int, scores []int64, ignored []bool) []int64 {
	var lo, hi int64 = math.MaxInt64, 0
	for j, i := range feasible {
		if ignored[i] {
			continue
		}
		lo, hi = min(lo, scores[j]), max(hi, scores[j])
	}
	for j, i := range feasible {
		switch {
		case ignored[i]:
			scores[j] = 0
		case hi == 0:
			scores[j] = maxScore
		default:
			scores[j] = maxScore * (hi + lo - scores[j]) / hi
		}
	}
	return scores
}

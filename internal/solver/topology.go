package solver

import (
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodewright/nodewright/internal/scheduling"
)

type topoKind int

const (
	spread topoKind = iota
	affinity
	antiAffinity
)

func (k topoKind) String() string {
	return [...]string{"topology spread", "pod affinity", "pod anti-affinity"}[k]
}

// topoGroup is one topology constraint shared by the pods that own it: which
// pods it counts (namespaces and selector), over which topology key, and the
// count per domain (a value of the key: a zone, a hostname).
type topoGroup struct {
	identity   string // the key it is interned under
	kind       topoKind
	key        string
	desc       string
	maxSkew    int32
	minDomains int32
	selector   labels.Selector
	namespaces map[string]bool // nil with nsAll: every namespace
	nsSelector labels.Selector // namespaceSelector of affinity terms
	nsAll      bool
	// selfMatch: the owner's own labels match the selector (the "+1" in
	// kube-scheduler's skew).
	selfMatch bool
	// For spread: which nodes count (nodeAffinityPolicy and nodeTaintsPolicy):
	// those matching any of the owner's required node affinity terms.
	nodeFilter  []scheduling.Requirements
	tolerations []corev1.Toleration
	honorTaints bool
	// domains that exist or could be created; counts of matching pods in each.
	domains map[string]bool
	counts  map[string]int
	// owners counts, per domain, pods owning this group: anti-affinity repels
	// matching pods from their domains.
	owners map[string]int
	total  int
	// required: from a required term (anti-affinity owners then repel others).
	required bool
	// epoch counts the times the group may have started allowing a domain it
	// refused before.
	epoch int
	// min caches minCount for spread groups; -1 when unknown.
	min int
}

// unrecord takes back a record.
func (g *topoGroup) unrecord(d string) {
	g.counts[d]--
	g.total--
	g.min = -1
	g.epoch++
}

// record counts one more matching pod in domain d.
func (g *topoGroup) record(d string) {
	c := g.counts[d]
	g.counts[d] = c + 1
	g.total++
	switch g.kind {
	case affinity:
		if c == 0 {
			g.epoch++
		}
	case spread:
		if g.domains[d] && c == g.min {
			g.min = -1 // may have risen
			g.epoch++
		}
	}
}

// matchesPod reports whether a pod's namespace and labels fall under the
// group's selector.
func (g *topoGroup) matchesPod(ns string, set labels.Set, nsLabels map[string]labels.Set) bool {
	if !g.nsAll && !g.namespaces[ns] {
		if g.nsSelector == nil || !g.nsSelector.Matches(nsLabels[ns]) {
			return false
		}
	}
	return g.selector.Matches(set)
}

// minCount is the smallest count over the eligible domains, with minDomains:
// fewer eligible domains than required make the minimum zero.
func (g *topoGroup) minCount() int {
	if g.key == corev1.LabelHostname {
		// A new node is always a possible domain with no pods.
		return 0
	}
	if int32(len(g.domains)) < g.minDomains {
		return 0
	}
	if g.min >= 0 {
		return g.min
	}
	m := math.MaxInt
	for d := range g.domains {
		if c := g.counts[d]; c < m {
			m = c
		}
	}
	if m == math.MaxInt {
		m = 0
	}
	g.min = m
	return m
}

// allows reports whether an owner pod may go to domain d. It is on the hot
// path: no formatting here; why says it in words.
func (g *topoGroup) allows(d string) bool {
	switch g.kind {
	case spread:
		return g.counts[d]+g.self()-g.minCount() <= int(g.maxSkew)
	case affinity:
		return g.counts[d] > 0 || (g.total == 0 && g.selfMatch)
	case antiAffinity:
		return g.counts[d] == 0
	}
	return true
}

func (g *topoGroup) self() int {
	if g.selfMatch {
		return 1
	}
	return 0
}

// why explains a refusal of domain d.
func (g *topoGroup) why(d string) string {
	switch g.kind {
	case spread:
		return fmt.Sprintf("%s: %s=%s would reach skew %d > maxSkew %d", g.desc, g.key, d, g.counts[d]+g.self()-g.minCount(), g.maxSkew)
	case affinity:
		return fmt.Sprintf("%s: no matching pod in %s=%s", g.desc, g.key, d)
	default:
		return fmt.Sprintf("%s: a matching pod is already in %s=%s", g.desc, g.key, d)
	}
}

// monotone reports whether a refusal by this group can never turn into an
// acceptance as more pods are placed: counts only grow.
func (g *topoGroup) monotone() bool {
	return g.kind == antiAffinity || (g.kind == spread && g.key == corev1.LabelHostname)
}

// nonEmpty drops a lone empty term: it filters nothing.
func nonEmpty(terms []scheduling.Requirements) []scheduling.Requirements {
	if len(terms) == 1 && len(terms[0]) == 0 {
		return nil
	}
	return terms
}

// filterMatches reports whether a node's labels match one of the terms.
func filterMatches(terms []scheduling.Requirements, labels map[string]string) bool {
	for _, t := range terms {
		if t.Matches(labels) == nil {
			return true
		}
	}
	return len(terms) == 0
}

// filterCompatible reports whether a planned node could match one of them.
func filterCompatible(terms []scheduling.Requirements, reqs scheduling.Requirements) bool {
	for _, t := range terms {
		if t.Compatible(reqs) == nil {
			return true
		}
	}
	return len(terms) == 0
}

// topology holds every topology group of a solve.
type topology struct {
	groups   []*topoGroup
	byKey    map[string]*topoGroup
	nsLabels map[string]labels.Set
}

func newTopology(nsLabels map[string]labels.Set) *topology {
	return &topology{byKey: map[string]*topoGroup{}, nsLabels: nsLabels}
}

// intern returns the existing group with the same identity, or adds g.
func (t *topology) intern(g *topoGroup, identity string) *topoGroup {
	if old, ok := t.byKey[identity]; ok {
		return old
	}
	g.identity = identity
	g.counts = map[string]int{}
	g.owners = map[string]int{}
	g.min = -1
	if g.domains == nil {
		g.domains = map[string]bool{}
	}
	t.byKey[identity] = g
	t.groups = append(t.groups, g)
	return g
}

// ownedGroups compiles a pod's required topology constraints: spreads
// (DoNotSchedule, and ScheduleAnyway until relaxed), pod affinity and
// anti-affinity (required, and preferred until relaxed).
func (t *topology) ownedGroups(p *corev1.Pod, hard []scheduling.Requirements) ([]*topoGroup, error) {
	var out []*topoGroup
	set := labels.Set(p.Labels)
	for _, c := range p.Spec.TopologySpreadConstraints {
		sel, err := spreadSelector(c, p)
		if err != nil {
			return nil, fmt.Errorf("topologySpreadConstraints: %w", err)
		}
		g := &topoGroup{
			kind: spread, key: c.TopologyKey, maxSkew: c.MaxSkew, selector: sel,
			namespaces: map[string]bool{p.Namespace: true},
			selfMatch:  sel.Matches(set),
		}
		if c.MinDomains != nil {
			g.minDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor {
			g.nodeFilter = nonEmpty(hard)
		}
		if c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
			g.honorTaints = true
			g.tolerations = p.Spec.Tolerations
		}
		g.desc = fmt.Sprintf("topology spread (%s, maxSkew %d, selector %s)", c.TopologyKey, c.MaxSkew, sel)
		id := fmt.Sprintf("spread|%s|%s|%d|%d|%s|%v|%v|%v", p.Namespace, c.TopologyKey, c.MaxSkew, g.minDomains, sel, g.selfMatch, g.nodeFilter, g.honorTaints)
		if g.honorTaints {
			id += fmt.Sprint(p.Spec.Tolerations)
		}
		out = append(out, t.intern(g, id))
	}
	a := p.Spec.Affinity
	if a == nil {
		return out, nil
	}
	var terms []corev1.PodAffinityTerm
	var kinds []topoKind
	var required []bool
	add := func(term corev1.PodAffinityTerm, kind topoKind, req bool) {
		terms, kinds, required = append(terms, term), append(kinds, kind), append(required, req)
	}
	if a.PodAffinity != nil {
		for _, term := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			add(term, affinity, true)
		}
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			add(w.PodAffinityTerm, affinity, false)
		}
	}
	if a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			add(term, antiAffinity, true)
		}
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			add(w.PodAffinityTerm, antiAffinity, false)
		}
	}
	for i, term := range terms {
		g, id, err := affinityGroup(kinds[i], term, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kinds[i], err)
		}
		g.selfMatch = g.matchesPod(p.Namespace, set, t.nsLabels)
		// Only required anti-affinity repels other pods (kube-scheduler's
		// symmetry); a preference binds only its owner.
		g.required = required[i]
		out = append(out, t.intern(g, fmt.Sprintf("%s|%v|%v", id, g.selfMatch, g.required)))
	}
	return out, nil
}

func affinityGroup(kind topoKind, term corev1.PodAffinityTerm, p *corev1.Pod) (*topoGroup, string, error) {
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return nil, "", err
	}
	if term.LabelSelector == nil {
		sel = labels.Nothing()
	}
	// matchLabelKeys and mismatchLabelKeys fold the pod's own values in.
	for _, k := range term.MatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			r, _ := labels.NewRequirement(k, "=", []string{v})
			sel = sel.Add(*r)
		}
	}
	for _, k := range term.MismatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			r, _ := labels.NewRequirement(k, "!=", []string{v})
			sel = sel.Add(*r)
		}
	}
	g := &topoGroup{kind: kind, key: term.TopologyKey, selector: sel}
	switch {
	case term.NamespaceSelector != nil && len(term.NamespaceSelector.MatchLabels) == 0 && len(term.NamespaceSelector.MatchExpressions) == 0:
		g.nsAll = true // an empty namespaceSelector means every namespace
	case term.NamespaceSelector != nil:
		nsSel, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
		if err != nil {
			return nil, "", err
		}
		g.nsSelector = nsSel
		g.namespaces = map[string]bool{}
		for _, ns := range term.Namespaces {
			g.namespaces[ns] = true
		}
	default:
		g.namespaces = map[string]bool{}
		for _, ns := range term.Namespaces {
			g.namespaces[ns] = true
		}
		if len(term.Namespaces) == 0 {
			g.namespaces[p.Namespace] = true
		}
	}
	g.desc = fmt.Sprintf("%s (%s, selector %s)", kind, term.TopologyKey, sel)
	ns := "*"
	if !g.nsAll {
		names := make([]string, 0, len(g.namespaces))
		for n := range g.namespaces {
			names = append(names, n)
		}
		sort.Strings(names)
		ns = strings.Join(names, ",")
		if g.nsSelector != nil {
			ns += "|" + g.nsSelector.String()
		}
	}
	id := fmt.Sprintf("%v|%s|%s|%s", kind, ns, term.TopologyKey, sel)
	return g, id, nil
}

func spreadSelector(c corev1.TopologySpreadConstraint, p *corev1.Pod) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
	if err != nil {
		return nil, err
	}
	if c.LabelSelector == nil {
		sel = labels.Nothing()
	}
	for _, k := range c.MatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			r, err := labels.NewRequirement(k, "=", []string{v})
			if err != nil {
				return nil, err
			}
			sel = sel.Add(*r)
		}
	}
	return sel, nil
}

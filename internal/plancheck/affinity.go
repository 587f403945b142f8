package plancheck

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
)

// affinityTerm is a required pod affinity or anti-affinity term as
// kube-scheduler's InterPodAffinity plugin reads it.
type affinityTerm struct {
	key      string
	selector labels.Selector
	// namespaces the term looks in; with nsSelector, also every namespace
	// whose labels (from solver.Input.Namespaces; none when not listed) it
	// matches, as kube-scheduler merges them in.
	namespaces sets.Set[string]
	nsSelector labels.Selector
	nsLabels   map[string]labels.Set
}

func (t affinityTerm) String() string {
	ns := strings.Join(sets.List(t.namespaces), ",")
	switch {
	case t.nsSelector != nil && t.nsSelector.Empty():
		ns = "all"
	case t.nsSelector != nil:
		ns += fmt.Sprintf(" + namespaceSelector %q", t.nsSelector.String())
	}
	return fmt.Sprintf("(topologyKey %s, selector %q, namespaces %s)", t.key, t.selector.String(), ns)
}

// matches reports whether p falls under the term.
func (t affinityTerm) matches(p *corev1.Pod) bool {
	if !t.namespaces.Has(p.Namespace) && (t.nsSelector == nil || !t.nsSelector.Matches(t.nsLabels[p.Namespace])) {
		return false
	}
	return t.selector.Matches(labels.Set(p.Labels))
}

// compileTerm reads one term of owner. matchLabelKeys and mismatchLabelKeys
// are folded into the selector with the owner's values, as the API server
// does when it admits the pod; a nil labelSelector matches nothing.
func compileTerm(owner *corev1.Pod, t corev1.PodAffinityTerm) (affinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
	if err != nil {
		return affinityTerm{}, fmt.Errorf("labelSelector: %w", err)
	}
	for _, k := range t.MatchLabelKeys {
		if v, ok := owner.Labels[k]; ok {
			r, err := labels.NewRequirement(k, selection.Equals, []string{v})
			if err != nil {
				return affinityTerm{}, fmt.Errorf("matchLabelKeys: %w", err)
			}
			sel = sel.Add(*r)
		}
	}
	for _, k := range t.MismatchLabelKeys {
		if v, ok := owner.Labels[k]; ok {
			r, err := labels.NewRequirement(k, selection.NotEquals, []string{v})
			if err != nil {
				return affinityTerm{}, fmt.Errorf("mismatchLabelKeys: %w", err)
			}
			sel = sel.Add(*r)
		}
	}
	at := affinityTerm{key: t.TopologyKey, selector: sel, namespaces: sets.New(t.Namespaces...)}
	if t.NamespaceSelector != nil {
		nsSel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
		if err != nil {
			return affinityTerm{}, fmt.Errorf("namespaceSelector: %w", err)
		}
		at.nsSelector = nsSel
	} else if len(t.Namespaces) == 0 {
		at.namespaces.Insert(owner.Namespace)
	}
	return at, nil
}

type termKind int

const (
	affinityTerms termKind = iota
	antiAffinityTerms
)

// requiredTerms compiles the pod's required affinity or anti-affinity terms.
func (ck *checker) requiredTerms(p *corev1.Pod, kind termKind) ([]affinityTerm, error) {
	a := p.Spec.Affinity
	var raw []corev1.PodAffinityTerm
	switch {
	case a == nil:
	case kind == affinityTerms && a.PodAffinity != nil:
		raw = a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	case kind == antiAffinityTerms && a.PodAntiAffinity != nil:
		raw = a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	out := make([]affinityTerm, 0, len(raw))
	for i, t := range raw {
		at, err := compileTerm(p, t)
		if err != nil {
			return nil, fmt.Errorf("term %d: %w", i, err)
		}
		at.nsLabels = ck.nsLabels
		out = append(out, at)
	}
	return out, nil
}

func matchesAll(terms []affinityTerm, p *corev1.Pod) bool {
	for _, t := range terms {
		if !t.matches(p) {
			return false
		}
	}
	return len(terms) > 0
}

// checkPodAffinity is the affinity half of kube-scheduler's InterPodAffinity
// filter. The node must carry every term's topology key, and for every term
// its domain must hold a pod that matches all of the pod's terms (a pod
// matching only some does not count). The exception lets the first of a
// group of pods with affinity to each other in: when no pod in the cluster
// matches all terms and the pod matches them itself, it passes.
func (ck *checker) checkPodAffinity(p *corev1.Pod, n *node) {
	terms, err := ck.requiredTerms(p, affinityTerms)
	if err != nil {
		ck.report(p, n.name, "pod-affinity", "required pod affinity cannot be parsed: "+err.Error())
		return
	}
	if len(terms) == 0 {
		return
	}
	nodeLabels := n.labels()
	var missing []string
	for _, t := range terms {
		v, ok := nodeLabels[t.key]
		if !ok {
			ck.report(p, n.name, "pod-affinity", fmt.Sprintf("node has no label %s, the topology key of required pod affinity term %s", t.key, t))
			return
		}
		found := false
		for _, bp := range ck.index.domain(t.key, v) {
			if matchesAll(terms, bp.pod) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, fmt.Sprintf("term %s: no pod matching all terms in %s=%s", t, t.key, v))
		}
	}
	if len(missing) == 0 {
		return
	}
	// kube-scheduler counts only pods on nodes that carry a term's key.
	var elsewhere *boundPod
	for _, bp := range ck.index.all {
		if matchesAll(terms, bp.pod) && hasAnyKey(bp.node, terms) {
			elsewhere = bp
			break
		}
	}
	if elsewhere == nil && matchesAll(terms, p) {
		return // the first pod of its kind
	}
	detail := "required pod affinity not satisfied: " + strings.Join(missing, "; ")
	switch {
	case elsewhere != nil:
		detail += fmt.Sprintf(" (matching pods exist elsewhere, e.g. %s on node %s)", podKey(elsewhere.pod), elsewhere.node.name)
	default:
		detail += " (no matching pod anywhere, and the pod does not match its own terms)"
	}
	ck.report(p, n.name, "pod-affinity", detail)
}

func hasAnyKey(n *node, terms []affinityTerm) bool {
	for _, t := range terms {
		if _, ok := n.labels()[t.key]; ok {
			return true
		}
	}
	return false
}

// checkPodAntiAffinity is the anti-affinity half of InterPodAffinity: no pod
// the incoming pod's terms match may be in the node's domain for that term
// (a node without the key is no domain, and passes), and, symmetrically, no
// bound pod whose own required anti-affinity matches the incoming pod may be
// in the node's domain for that pod's term.
func (ck *checker) checkPodAntiAffinity(p *corev1.Pod, n *node) {
	nodeLabels := n.labels()
	terms, err := ck.requiredTerms(p, antiAffinityTerms)
	if err != nil {
		ck.report(p, n.name, "pod-anti-affinity", "required pod anti-affinity cannot be parsed: "+err.Error())
	}
	for _, t := range terms {
		v, ok := nodeLabels[t.key]
		if !ok {
			continue
		}
		for _, bp := range ck.index.domain(t.key, v) {
			if t.matches(bp.pod) {
				ck.report(p, n.name, "pod-anti-affinity", fmt.Sprintf("required anti-affinity term %s matches pod %s on node %s, in the same domain %s=%s",
					t, podKey(bp.pod), bp.node.name, t.key, v))
				break
			}
		}
	}
	ck.checkAntiAffinitySymmetry(p, n)
}

// checkAntiAffinitySymmetry: no bound pod in the node's domain has a required
// anti-affinity term matching the incoming pod.
func (ck *checker) checkAntiAffinitySymmetry(p *corev1.Pod, n *node) {
	nodeLabels := n.labels()
	for key, byValue := range ck.index.antiByDomain {
		v, ok := nodeLabels[key]
		if !ok {
			continue
		}
		for _, ot := range byValue[v] {
			if ot.term.matches(p) {
				ck.report(p, n.name, "pod-anti-affinity", fmt.Sprintf("pod %s on node %s has required anti-affinity term %s matching this pod, in the same domain %s=%s",
					podKey(ot.owner.pod), ot.owner.node.name, ot.term, key, v))
			}
		}
	}
}

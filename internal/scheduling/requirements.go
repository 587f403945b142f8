package scheduling

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Requirements is a set of Requirement keyed by label key, at most one per
// key; a node must meet all of them. A key that is missing constrains
// nothing. Like any map, a nil Requirements can be read but not added to.
type Requirements map[string]*Requirement

// NewRequirements collects rs, intersecting requirements that share a key.
func NewRequirements(rs ...*Requirement) Requirements {
	out := make(Requirements, len(rs))
	out.Add(rs...)
	return out
}

// FromNodeSelectorRequirements reads Kubernetes node selector expressions
// (ANDed, as within one node selector term), intersecting repeated keys.
func FromNodeSelectorRequirements(rs ...corev1.NodeSelectorRequirement) Requirements {
	out := make(Requirements, len(rs))
	for _, r := range rs {
		out.Add(NewRequirement(r.Key, r.Operator, r.Values...))
	}
	return out
}

// FromLabels gives key In [value] for every label, which is what a node with
// exactly these labels offers.
func FromLabels(labels map[string]string) Requirements {
	out := make(Requirements, len(labels))
	for k, v := range labels {
		out[k] = NewRequirement(k, corev1.NodeSelectorOpIn, v)
	}
	return out
}

// Add intersects rs into r, in place.
func (r Requirements) Add(rs ...*Requirement) {
	for _, req := range rs {
		if have, ok := r[req.key]; ok {
			req = have.Intersection(req)
		}
		r[req.key] = req
	}
}

// Copy returns a new map with the same requirements. Sharing them is safe
// because a Requirement never changes: Add replaces entries, it does not
// modify them.
func (r Requirements) Copy() Requirements {
	out := make(Requirements, len(r))
	for k, v := range r {
		out[k] = v
	}
	return out
}

// Get returns the requirement for key, or, when r has none, one that allows
// every value and absence too, so that callers need not check first.
func (r Requirements) Get(key string) *Requirement {
	if req, ok := r[key]; ok {
		return req
	}
	return unconstrained(key)
}

// Has reports whether r constrains key.
func (r Requirements) Has(key string) bool {
	_, ok := r[key]
	return ok
}

// Keys returns the keys, sorted.
func (r Requirements) Keys() []string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Intersect returns a new Requirements that holds what both r and o demand.
func (r Requirements) Intersect(o Requirements) Requirements {
	out := r.Copy()
	for _, req := range o {
		out.Add(req)
	}
	return out
}

// Compatible reports whether some node could satisfy both r and o: for every
// key both have, the two requirements must share a value, or both allow the
// label to be absent (so DoesNotExist fits NotIn, but not In, Exists or Gt).
// Keys on one side only are fine, since the other side does not care about
// them. The error is an *IncompatibleError for the smallest failing key, so
// that the same inputs always give the same message. It does not allocate
// when the answer is nil.
func (r Requirements) Compatible(o Requirements) error {
	small, large := r, o
	if len(large) < len(small) {
		small, large = large, small
	}
	var bad string
	found := false
	for key, a := range small {
		b, ok := large[key]
		if !ok || intersects(a, b) {
			continue
		}
		if !found || key < bad {
			bad, found = key, true
		}
	}
	if !found {
		return nil
	}
	return &IncompatibleError{Key: bad, A: r[bad], B: o[bad]}
}

// Matches reports whether a node with these labels satisfies r: every key of
// r must be a label with an allowed value, or be missing from the node with
// a requirement that allows absence (NotIn, DoesNotExist). Labels r does not
// mention do not matter. The error is an *IncompatibleError for the smallest
// failing key, naming the node's value or saying it is absent. It does not
// allocate when the answer is nil.
func (r Requirements) Matches(labels map[string]string) error {
	var bad string
	found := false
	for key, req := range r {
		value, ok := labels[key]
		if ok && req.Has(value) || !ok && req.allowsAbsent {
			continue
		}
		if !found || key < bad {
			bad, found = key, true
		}
	}
	if !found {
		return nil
	}
	label := NewRequirement(bad, corev1.NodeSelectorOpDoesNotExist)
	if value, ok := labels[bad]; ok {
		label = NewRequirement(bad, corev1.NodeSelectorOpIn, value)
	}
	return &IncompatibleError{Key: bad, A: r[bad], B: label, node: true}
}

// Labels returns the labels r pins down: every key whose requirement allows
// exactly one value, mapped to that value. These are the labels a new node
// for r must carry.
func (r Requirements) Labels() map[string]string {
	out := make(map[string]string)
	for k, req := range r {
		if !req.complement && len(req.values) == 1 {
			out[k] = req.values[0]
		}
	}
	return out
}

// NodeSelectorRequirements writes r as Kubernetes expressions for one node
// selector term, sorted by key. A key whose requirement needs more than one
// expression gets several (Exists and NotIn; Gt, Lt and NotIn), which the
// term ANDs, so that reading them back with FromNodeSelectorRequirements
// gives the same sets; see Requirement.NodeSelectorRequirement for the single
// expressions. Keys that constrain nothing (NotIn with no values) are left
// out, because the API server refuses NotIn without values and a missing key
// means the same.
func (r Requirements) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	for _, k := range r.Keys() {
		req := r[k]
		if req.complement && !req.integer && len(req.values) == 0 && req.allowsAbsent {
			continue
		}
		out = append(out, req.expressions()...)
	}
	return out
}

// String lists the requirements sorted by key, separated by ", ".
func (r Requirements) String() string {
	var b strings.Builder
	for i, k := range r.Keys() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r[k].String())
	}
	return b.String()
}

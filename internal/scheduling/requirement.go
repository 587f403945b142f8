package scheduling

import (
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Operators beyond the Kubernetes ones. Karpenter-style node pools use them for
// integer labels such as a CPU count, where "at least 4" reads better than
// "Gt 3". Kubernetes itself has no such operators, so they never leave this
// package: NodeSelectorRequirement writes them as Gt/Lt.
const (
	OpGte corev1.NodeSelectorOperator = "Gte" // integer value >= N
	OpLte corev1.NodeSelectorOperator = "Lte" // integer value <= N
)

// Requirement is the set of values allowed for one label key, plus whether a
// node without the label is acceptable.
//
// The set is either finite (the allowed values) or the complement of a finite
// set (any value except the listed ones). A complement set may also be
// restricted to values that parse as integers within inclusive bounds, which
// is how Gt, Lt, Gte and Lte are kept. Finite sets never carry bounds: the
// bounds are applied to their values when they are built, so a finite set is
// always just its list.
//
// Absence of the label is tracked apart from the values because it does not
// follow from them: NotIn [a] and Exists∩NotIn [a] allow the same values, but
// only the first accepts a node without the label. NotIn and DoesNotExist
// allow absence; In, Exists, Gt, Lt, Gte and Lte do not; an intersection
// allows it only if both sides do. DoesNotExist is therefore the empty finite
// set that allows absence, and the empty finite set that does not (In with no
// values, Exists∩DoesNotExist, Gt 2∩Lt 3) can be met by no node at all.
//
// A Requirement never changes after it is built; every operation returns a
// new one. That lets Requirements share them between copies.
type Requirement struct {
	key string
	// complement says whether values are the excluded values (true) or the
	// allowed ones (false).
	complement bool
	// values is sorted and free of duplicates. A sorted slice rather than a
	// map: the sets are small (zones, capacity types, at most a few hundred
	// instance types), Has is then a binary search that neither hashes nor
	// allocates, intersections are linear merges, and Values, String and
	// NodeSelectorRequirement come out sorted without sorting again.
	values []string
	// integer restricts a complement set to values that parse as integers in
	// [lo, hi]. Bounds are inclusive, unlike Gt and Lt, so that Gte
	// math.MinInt64 and Lte math.MaxInt64 need no value outside int64.
	integer bool
	lo, hi  int64
	// allowsAbsent says whether a node without the label satisfies this.
	allowsAbsent bool
	minValues    *int
}

// NewRequirement builds the requirement for one node selector expression.
//
// In, NotIn: values as given (order and duplicates do not matter). Exists and
// DoesNotExist ignore values, as Kubernetes requires them to have none.
// Gt, Lt, OpGte and OpLte need exactly one value that parses as a base 10
// int64, as the Kubernetes scheduler parses it; with no value, several
// values, a non-integer value, or a bound nothing can pass (Gt
// math.MaxInt64), the result is the empty set that no node satisfies,
// because the scheduler matches no node with such an expression. An unknown
// operator gives that empty set too.
func NewRequirement(key string, op corev1.NodeSelectorOperator, values ...string) *Requirement {
	return NewRequirementWithMinValues(key, op, nil, values...)
}

// NewRequirementWithMinValues is NewRequirement plus minValues: the least
// number of distinct values the launch decision must keep open for this key
// (nil = none). The package carries it through intersections; enforcing it is
// up to the caller that picks instance types.
func NewRequirementWithMinValues(key string, op corev1.NodeSelectorOperator, minValues *int, values ...string) *Requirement {
	r := &Requirement{key: key, minValues: copyInt(minValues)}
	switch op {
	case corev1.NodeSelectorOpIn:
		r.values = sortedUnique(values)
	case corev1.NodeSelectorOpNotIn:
		r.complement = true
		r.values = sortedUnique(values)
		r.allowsAbsent = true
	case corev1.NodeSelectorOpExists:
		r.complement = true
	case corev1.NodeSelectorOpDoesNotExist:
		r.allowsAbsent = true
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, OpGte, OpLte:
		if lo, hi, ok := integerBounds(op, values); ok {
			r.complement = true
			r.integer = true
			r.lo, r.hi = lo, hi
		}
	}
	return r
}

// unconstrained is what Requirements.Get returns for a key it does not
// have: every value, and absence too.
func unconstrained(key string) *Requirement {
	return &Requirement{key: key, complement: true, allowsAbsent: true}
}

// Key is the label key.
func (r *Requirement) Key() string { return r.key }

// Complement reports whether the set is "any value except a finite list"
// (possibly restricted to integers in bounds) rather than a finite list.
func (r *Requirement) Complement() bool { return r.complement }

// Has reports whether a node whose label has this value satisfies r. It does
// not allocate.
func (r *Requirement) Has(value string) bool {
	_, listed := slices.BinarySearch(r.values, value)
	if !r.complement {
		return listed
	}
	return !listed && r.inBounds(value)
}

// inBounds reports whether value passes the integer bounds of a complement
// set (always true without bounds).
func (r *Requirement) inBounds(value string) bool {
	if !r.integer {
		return true
	}
	n, ok := parseInt64(value)
	return ok && r.lo <= n && n <= r.hi
}

// Len is the number of allowed values: the list length for a finite set,
// math.MaxInt64 for a complement set, which stands for "unbounded" (even
// Gte 2∩Lte 2 allows "2", "02", "+2", ...). Absence is not a value and is not
// counted.
func (r *Requirement) Len() int {
	if r.complement {
		return math.MaxInt64
	}
	return len(r.values)
}

// Values returns the allowed values of a finite set, sorted (an empty,
// non-nil slice for the empty set), and nil for a complement set. The slice is
// the caller's to keep.
func (r *Requirement) Values() []string {
	if r.complement {
		return nil
	}
	return append([]string{}, r.values...)
}

// MinValues returns a copy of the minValues, or nil.
func (r *Requirement) MinValues() *int { return copyInt(r.minValues) }

// Any returns some allowed value, the same one every time: the smallest value
// of a finite set ("" for the empty set), or for a complement set the
// smallest allowed non-negative integer, else the largest allowed negative
// one (see anyInteger). Integers serve every complement set because a bare
// number is a valid label value and bounded sets need one anyway.
func (r *Requirement) Any() string {
	if !r.complement {
		if len(r.values) == 0 {
			return ""
		}
		return r.values[0]
	}
	return r.anyInteger()
}

// satisfiable reports whether some node can satisfy r: with an allowed value
// or by lacking the label. Complement sets are never empty, as Intersection
// turns a complement whose bounds cross into the empty finite set.
func (r *Requirement) satisfiable() bool {
	return r.allowsAbsent || r.complement || len(r.values) > 0
}

func sortedUnique(values []string) []string {
	if len(values) == 0 {
		return nil
	}
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
}

func copyInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// WithMinValues returns a copy of r whose minValues is n (nil for none):
// Intersection only ever raises minValues, so lowering it, as BestEffort
// does, needs a fresh requirement.
func (r *Requirement) WithMinValues(n *int) *Requirement {
	out := *r
	out.minValues = copyInt(n)
	return &out
}

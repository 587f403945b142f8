package scheduling

import (
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// NodeSelectorRequirement returns the single Kubernetes expression closest to
// r, for writing NodeClaim requirements:
//
//   - finite set: In [values]; the empty set that allows absence:
//     DoesNotExist; the empty set no node can meet: In with no values
//     (matches nothing, and the API server refuses it rather than letting it
//     through silently);
//   - complement without bounds: Exists when absence is not allowed and
//     nothing is excluded, else NotIn [excluded] — with no excluded values
//     that is the unconstrained requirement, again refused by the API server;
//   - complement with bounds: Gt lower-1 when there is a lower bound, else
//     Lt upper+1; with neither (Gte math.MinInt64), Gt math.MinInt64, which
//     wrongly drops that one value because Kubernetes cannot say more.
//
// One expression cannot say everything: a requirement that both excludes
// values and demands the label (Exists∩NotIn) comes out as NotIn, which lets
// absence through, and bounds drop the other bound and the exclusions.
// Requirements.NodeSelectorRequirements writes several expressions per key
// and loses nothing.
func (r *Requirement) NodeSelectorRequirement() corev1.NodeSelectorRequirement {
	return r.expressions()[0]
}

// expressions returns expressions whose conjunction is exactly r (apart from
// the math.MinInt64 corner above), the closest single one first. An
// unconstrained requirement gives just NotIn with no values;
// Requirements.NodeSelectorRequirements leaves it out.
func (r *Requirement) expressions() []corev1.NodeSelectorRequirement {
	expr := func(op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: r.key, Operator: op, Values: values}
	}
	switch {
	case !r.complement && len(r.values) == 0 && r.allowsAbsent:
		return []corev1.NodeSelectorRequirement{expr(corev1.NodeSelectorOpDoesNotExist)}
	case !r.complement:
		return []corev1.NodeSelectorRequirement{expr(corev1.NodeSelectorOpIn, r.Values()...)}
	case !r.integer && len(r.values) == 0 && !r.allowsAbsent:
		return []corev1.NodeSelectorRequirement{expr(corev1.NodeSelectorOpExists)}
	case !r.integer && r.allowsAbsent:
		return []corev1.NodeSelectorRequirement{expr(corev1.NodeSelectorOpNotIn, r.excluded()...)}
	case !r.integer:
		return []corev1.NodeSelectorRequirement{
			expr(corev1.NodeSelectorOpNotIn, r.excluded()...),
			expr(corev1.NodeSelectorOpExists),
		}
	}
	var out []corev1.NodeSelectorRequirement
	if r.lo > math.MinInt64 {
		out = append(out, expr(corev1.NodeSelectorOpGt, strconv.FormatInt(r.lo-1, 10)))
	}
	if r.hi < math.MaxInt64 {
		out = append(out, expr(corev1.NodeSelectorOpLt, strconv.FormatInt(r.hi+1, 10)))
	}
	if len(out) == 0 {
		out = append(out, expr(corev1.NodeSelectorOpGt, strconv.FormatInt(math.MinInt64, 10)))
	}
	if len(r.values) > 0 {
		out = append(out, expr(corev1.NodeSelectorOpNotIn, r.excluded()...))
	}
	return out
}

// excluded returns a copy of the excluded values, never nil, so that a NotIn
// expression always carries a list.
func (r *Requirement) excluded() []string { return append([]string{}, r.values...) }

// maxListed caps how many values String shows, because instance type lists
// run to hundreds and would drown the message they are part of.
const maxListed = 10

// String describes r for people, e.g. `topology.kubernetes.io/zone In [a b]`,
// `karpenter.sh/capacity-type NotIn [spot]`, `x Exists`, `n Gt 3`. A
// requirement that needs several expressions joins them with "and"
// (`n Gt 3 and Lt 10`); lists longer than ten values are cut short
// (`[a ... j and 5 more]`); MinValues is appended as `minValues N`.
func (r *Requirement) String() string {
	return r.key + " " + r.describe()
}

// describe is String without the key, for errors that name the key once.
func (r *Requirement) describe() string {
	var b strings.Builder
	for i, e := range r.expressions() {
		if i > 0 {
			b.WriteString(" and ")
		}
		b.WriteString(string(e.Operator))
		switch e.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			b.WriteString(" ")
			writeList(&b, e.Values)
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			b.WriteString(" ")
			b.WriteString(e.Values[0])
		}
	}
	if r.minValues != nil {
		b.WriteString(" minValues ")
		b.WriteString(strconv.Itoa(*r.minValues))
	}
	return b.String()
}

func writeList(b *strings.Builder, values []string) {
	b.WriteString("[")
	for i, v := range values {
		if i == maxListed {
			b.WriteString(" and ")
			b.WriteString(strconv.Itoa(len(values) - maxListed))
			b.WriteString(" more")
			break
		}
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(v)
	}
	b.WriteString("]")
}

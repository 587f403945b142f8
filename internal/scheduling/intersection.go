package scheduling

import "strings"

// Intersection returns the requirement a node meets when it meets both r and
// o: the values both allow, integer bounds tightened, absence allowed only if
// both allow it, and the larger MinValues. o is meant to have the same key;
// the result carries r's key either way.
func (r *Requirement) Intersection(o *Requirement) *Requirement {
	out := &Requirement{
		key:          r.key,
		allowsAbsent: r.allowsAbsent && o.allowsAbsent,
		minValues:    maxMinValues(r.minValues, o.minValues),
	}
	switch {
	case !r.complement && !o.complement:
		out.values = intersectSorted(r.values, o.values)
	case !r.complement:
		out.values = keepAllowed(r.values, o)
	case !o.complement:
		out.values = keepAllowed(o.values, r)
	default:
		rlo, rhi := r.bounds()
		olo, ohi := o.bounds()
		lo, hi := max(rlo, olo), min(rhi, ohi)
		if lo > hi {
			// No integer passes both bounds: the empty finite set. Absence
			// stays disallowed because a bounded side never allows it.
			return out
		}
		out.complement = true
		out.integer = r.integer || o.integer
		if out.integer {
			out.lo, out.hi = lo, hi
		}
		// Exclusions the bounds already rule out say nothing; dropping them
		// keeps one spelling per set and NodeSelectorRequirement short.
		out.values = keepInBounds(unionSorted(r.values, o.values), out)
	}
	return out
}

// intersects reports whether r.Intersection(o) is satisfiable, without
// building it, so that Compatible does not allocate.
func intersects(r, o *Requirement) bool {
	if r.allowsAbsent && o.allowsAbsent {
		return true
	}
	switch {
	case !r.complement && !o.complement:
		return overlapSorted(r.values, o.values)
	case !r.complement:
		return anyAllowed(r.values, o)
	case !o.complement:
		return anyAllowed(o.values, r)
	default:
		// Two complements of finite lists always leave values over; with
		// bounds, every integer in range has endless spellings ("2", "02",
		// ...), so only crossed bounds make them empty.
		rlo, rhi := r.bounds()
		olo, ohi := o.bounds()
		return max(rlo, olo) <= min(rhi, ohi)
	}
}

func maxMinValues(a, b *int) *int {
	switch {
	case a == nil:
		return copyInt(b)
	case b == nil || *a >= *b:
		return copyInt(a)
	default:
		return copyInt(b)
	}
}

// intersectSorted returns the values in both sorted lists, by merging.
func intersectSorted(a, b []string) []string {
	var out []string
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch c := strings.Compare(a[i], b[j]); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

func overlapSorted(a, b []string) bool {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch c := strings.Compare(a[i], b[j]); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			return true
		}
	}
	return false
}

// unionSorted returns the values in either sorted list, by merging.
func unionSorted(a, b []string) []string {
	if len(a) == 0 {
		return b // safe to share: lists are never modified after building
	}
	if len(b) == 0 {
		return a
	}
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := strings.Compare(a[i], b[j]); {
		case c < 0:
			out = append(out, a[i])
			i++
		case c > 0:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// keepAllowed returns the values of the sorted list that r allows.
func keepAllowed(values []string, r *Requirement) []string {
	var out []string
	for _, v := range values {
		if r.Has(v) {
			out = append(out, v)
		}
	}
	return out
}

func anyAllowed(values []string, r *Requirement) bool {
	for _, v := range values {
		if r.Has(v) {
			return true
		}
	}
	return false
}

// keepInBounds returns the values of the sorted list that pass r's bounds.
func keepInBounds(values []string, r *Requirement) []string {
	if !r.integer {
		return values
	}
	var out []string
	for _, v := range values {
		if r.inBounds(v) {
			out = append(out, v)
		}
	}
	return out
}

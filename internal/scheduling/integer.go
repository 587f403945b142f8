package scheduling

import (
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// parseInt64 accepts exactly what strconv.ParseInt(s, 10, 64) accepts — an
// optional sign, then decimal digits, within int64 — because that is how the
// Kubernetes scheduler reads Gt and Lt label values, and Matches must agree
// with the scheduler. It exists because ParseInt allocates an error for every
// non-integer, and Has runs in the simulation's hot path.
func parseInt64(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	switch s[0] {
	case '+':
		s = s[1:]
	case '-':
		neg = true
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++ // -9223372036854775808 is in range, +9223372036854775808 is not
	}
	var u uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (limit-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if neg {
		return -int64(u), true // wraps to math.MinInt64 for u == 1<<63, as wanted
	}
	return int64(u), true
}

// integerBounds turns Gt/Lt/Gte/Lte and their single value into inclusive
// bounds. ok is false when the expression can match nothing: not exactly one
// value, a value that is not an int64, or a bound beyond the int64 range.
func integerBounds(op corev1.NodeSelectorOperator, values []string) (lo, hi int64, ok bool) {
	if len(values) != 1 {
		return 0, 0, false
	}
	n, ok := parseInt64(values[0])
	if !ok {
		return 0, 0, false
	}
	lo, hi = math.MinInt64, math.MaxInt64
	switch op {
	case corev1.NodeSelectorOpGt:
		if n == math.MaxInt64 {
			return 0, 0, false
		}
		lo = n + 1
	case corev1.NodeSelectorOpLt:
		if n == math.MinInt64 {
			return 0, 0, false
		}
		hi = n - 1
	case OpGte:
		lo = n
	case OpLte:
		hi = n
	}
	return lo, hi, true
}

// bounds returns the integer bounds of r, or the whole int64 range when r has
// none, so that callers can treat every complement set alike.
func (r *Requirement) bounds() (lo, hi int64) {
	if r.integer {
		return r.lo, r.hi
	}
	return math.MinInt64, math.MaxInt64
}

// anyInteger picks the allowed value of a complement set: the smallest
// allowed non-negative integer, else the largest allowed negative one, written
// canonically. Only len(values)+1 integers need trying, since only that many
// can be excluded. If the bounds hold fewer integers than that and all of
// them are excluded, the set still has the padded spellings ("02" for 2) that
// ParseInt accepts, and one of those is returned so that Any is "" only for
// an empty set.
func (r *Requirement) anyInteger() string {
	lo, hi := r.bounds()
	tries := len(r.values) + 1
	if up := max(lo, 0); up <= hi {
		for n := up; tries > 0; n++ {
			if s := strconv.FormatInt(n, 10); r.allowedExclusion(s) {
				return s
			}
			tries--
			if n == hi {
				break
			}
		}
	}
	if down := min(hi, -1); down >= lo {
		for n := down; tries > 0; n-- {
			if s := strconv.FormatInt(n, 10); r.allowedExclusion(s) {
				return s
			}
			tries--
			if n == lo {
				break
			}
		}
	}
	// Every integer in bounds is excluded in canonical form; pad the first
	// one with zeros until the spelling is not excluded either.
	first := max(lo, min(hi, 0))
	s := strconv.FormatInt(first, 10)
	for {
		if first < 0 {
			s = "-0" + s[1:]
		} else {
			s = "0" + s
		}
		if r.allowedExclusion(s) {
			return s
		}
	}
}

// allowedExclusion reports whether s, already known to be in bounds, is not
// one of the excluded values.
func (r *Requirement) allowedExclusion(s string) bool {
	_, excluded := slices.BinarySearch(r.values, s)
	return !excluded
}

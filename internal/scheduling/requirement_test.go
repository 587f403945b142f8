package scheduling

import (
	"math"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Shorthands for requirements on one key, so tables read like the algebra.
const k = "k"

func in(v ...string) *Requirement    { return NewRequirement(k, corev1.NodeSelectorOpIn, v...) }
func notIn(v ...string) *Requirement { return NewRequirement(k, corev1.NodeSelectorOpNotIn, v...) }
func exists() *Requirement           { return NewRequirement(k, corev1.NodeSelectorOpExists) }
func dne() *Requirement              { return NewRequirement(k, corev1.NodeSelectorOpDoesNotExist) }
func gt(n string) *Requirement       { return NewRequirement(k, corev1.NodeSelectorOpGt, n) }
func lt(n string) *Requirement       { return NewRequirement(k, corev1.NodeSelectorOpLt, n) }
func gte(n string) *Requirement      { return NewRequirement(k, OpGte, n) }
func lte(n string) *Requirement      { return NewRequirement(k, OpLte, n) }

// and intersects requirements left to right.
func and(rs ...*Requirement) *Requirement {
	out := rs[0]
	for _, r := range rs[1:] {
		out = out.Intersection(r)
	}
	return out
}

var (
	maxInt = strconv.FormatInt(math.MaxInt64, 10)
	minInt = strconv.FormatInt(math.MinInt64, 10)
)

// set describes what a requirement allows, for comparing against tables.
type set struct {
	complement bool
	values     []string // finite sets only
	absent     bool     // a node without the label passes
	allowed    []string
	denied     []string
}

func checkSet(t *testing.T, r *Requirement, want set) {
	t.Helper()
	if r.Complement() != want.complement {
		t.Errorf("%v: Complement() = %v, want %v", r, r.Complement(), want.complement)
	}
	if !want.complement {
		if got := r.Values(); !slices.Equal(got, want.values) || got == nil {
			t.Errorf("%v: Values() = %#v, want %q", r, got, want.values)
		}
		if r.Len() != len(want.values) {
			t.Errorf("%v: Len() = %d, want %d", r, r.Len(), len(want.values))
		}
	} else {
		if r.Values() != nil {
			t.Errorf("%v: Values() = %q, want nil for a complement set", r, r.Values())
		}
		if r.Len() != math.MaxInt64 {
			t.Errorf("%v: Len() = %d, want math.MaxInt64", r, r.Len())
		}
	}
	if r.allowsAbsent != want.absent {
		t.Errorf("%v: allows absence = %v, want %v", r, r.allowsAbsent, want.absent)
	}
	for _, v := range want.allowed {
		if !r.Has(v) {
			t.Errorf("%v: Has(%q) = false, want true", r, v)
		}
	}
	for _, v := range want.denied {
		if r.Has(v) {
			t.Errorf("%v: Has(%q) = true, want false", r, v)
		}
	}
	if v := r.Any(); r.Len() > 0 && !r.Has(v) {
		t.Errorf("%v: Any() = %q is not allowed", r, v)
	}
}

func TestNewRequirement(t *testing.T) {
	empty := set{values: []string{}, denied: []string{"", "a", "1"}}
	for _, tc := range []struct {
		name string
		r    *Requirement
		want set
	}{
		{"In sorts and dedupes", in("b", "a", "a"), set{values: []string{"a", "b"}, allowed: []string{"a", "b"}, denied: []string{"c", ""}}},
		{"In without values", in(), empty},
		{"NotIn", notIn("spot"), set{complement: true, absent: true, allowed: []string{"on-demand", ""}, denied: []string{"spot"}}},
		{"NotIn without values", notIn(), set{complement: true, absent: true, allowed: []string{"a", ""}}},
		{"Exists ignores values", NewRequirement(k, corev1.NodeSelectorOpExists, "x"), set{complement: true, allowed: []string{"x", "y", ""}}},
		{"DoesNotExist ignores values", NewRequirement(k, corev1.NodeSelectorOpDoesNotExist, "x"), set{values: []string{}, absent: true, denied: []string{"x", ""}}},
		{"Gt", gt("3"), set{complement: true,
			allowed: []string{"4", "+4", "04", maxInt},
			denied:  []string{"3", "-4", "x", "", "3.5", " 4", "4 ", "1_0", "0x10", "9223372036854775808"}}},
		{"Lt", lt("3"), set{complement: true, allowed: []string{"2", "-5", minInt}, denied: []string{"3", "a", "-9223372036854775809"}}},
		{"Gte", gte("2"), set{complement: true, allowed: []string{"2", "3"}, denied: []string{"1"}}},
		{"Lte", lte("-2"), set{complement: true, allowed: []string{"-2", "-3"}, denied: []string{"-1", "0"}}},
		{"Lte MaxInt64 is any integer", lte(maxInt), set{complement: true, allowed: []string{"0", maxInt, minInt}, denied: []string{"a"}}},
		// Bounds nothing can meet, as the Kubernetes scheduler sees them.
		{"Gt non-integer is empty", gt("a"), empty},
		{"Gt two values is empty", NewRequirement(k, corev1.NodeSelectorOpGt, "1", "2"), empty},
		{"Gt no value is empty", NewRequirement(k, corev1.NodeSelectorOpGt), empty},
		{"Gt MaxInt64 is empty", gt(maxInt), empty},
		{"Lt MinInt64 is empty", lt(minInt), empty},
		{"unknown operator is empty", NewRequirement(k, "Near", "a"), empty},
	} {
		t.Run(tc.name, func(t *testing.T) { checkSet(t, tc.r, tc.want) })
	}
}

func TestIntersection(t *testing.T) {
	empty := set{values: []string{}, denied: []string{"", "a", "1"}}
	for _, tc := range []struct {
		name string
		a, b *Requirement
		want set
	}{
		{"In∩In", in("a", "b", "c"), in("b", "c", "d"), set{values: []string{"b", "c"}}},
		{"In∩In disjoint", in("a"), in("b"), empty},
		{"In∩NotIn", in("a", "b", "c"), notIn("b"), set{values: []string{"a", "c"}}},
		{"NotIn∩NotIn", notIn("a"), notIn("b"), set{complement: true, absent: true, allowed: []string{"c", ""}, denied: []string{"a", "b"}}},
		{"Exists∩In", exists(), in("a"), set{values: []string{"a"}}},
		{"Exists∩NotIn demands the label", exists(), notIn("a"), set{complement: true, allowed: []string{"b"}, denied: []string{"a"}}},
		{"DoesNotExist∩In", dne(), in("a"), empty},
		{"DoesNotExist∩NotIn", dne(), notIn("a"), set{values: []string{}, absent: true}},
		{"DoesNotExist∩DoesNotExist", dne(), dne(), set{values: []string{}, absent: true}},
		{"Exists∩DoesNotExist", exists(), dne(), empty},
		{"DoesNotExist∩Gt", dne(), gt("1"), empty},
		{"In∩unconstrained", in("a"), unconstrained(k), set{values: []string{"a"}}},
		{"In [1 2 3 4]∩Gt 2", in("1", "2", "3", "4"), gt("2"), set{values: []string{"3", "4"}}},
		{"In keeps only integers under bounds", in("a", "1", "05", "-3"), gt("0"), set{values: []string{"05", "1"}}},
		{"Gt 2∩Lt 3", gt("2"), lt("3"), empty},
		{"Gt 2∩Lt 2", gt("2"), lt("2"), empty},
		{"Gte 2∩Lte 2", gte("2"), lte("2"), set{complement: true, allowed: []string{"2", "02", "+2"}, denied: []string{"1", "3", "a"}}},
		{"Gt 2∩Gt 5", gt("2"), gt("5"), set{complement: true, allowed: []string{"6"}, denied: []string{"5"}}},
		{"Gt∩Lt", gt("1"), lt("10"), set{complement: true, allowed: []string{"2", "9"}, denied: []string{"1", "10"}}},
		{"Exists∩Gt", exists(), gt("2"), set{complement: true, allowed: []string{"3"}, denied: []string{"2", "a"}}},
		{"NotIn∩Gt", notIn("3", "x"), gt("1"), set{complement: true, allowed: []string{"2", "4", "03"}, denied: []string{"1", "3", "x"}}},
		{"Gt∩empty", gt("1"), gt("a"), empty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkSet(t, tc.a.Intersection(tc.b), tc.want)
			checkSet(t, tc.b.Intersection(tc.a), tc.want)
			if got, want := intersects(tc.a, tc.b), tc.a.Intersection(tc.b).satisfiable(); got != want {
				t.Errorf("intersects = %v, Intersection satisfiable = %v", got, want)
			}
		})
	}
}

// Exclusions that the bounds already rule out are dropped, so that they do
// not show up in NodeClaim requirements.
func TestIntersectionPrunesExclusions(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *Requirement
		want []string
	}{
		{"non-integer and out of range", and(notIn("x", "1", "3", "03"), gt("1")), []string{"03", "3"}},
		{"all out of range", and(notIn("3"), lt("3")), nil},
		{"without bounds kept", and(notIn("b"), notIn("a", "b")), []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Equal(tc.r.values, tc.want) {
				t.Errorf("%v: excluded = %q, want %q", tc.r, tc.r.values, tc.want)
			}
		})
	}
}

func TestIntersectionMinValues(t *testing.T) {
	ptr := func(n int) *int { return &n }
	with := func(n *int) *Requirement { return NewRequirementWithMinValues(k, corev1.NodeSelectorOpExists, n) }
	for _, tc := range []struct {
		name string
		a, b *int
		want *int
	}{
		{"neither", nil, nil, nil},
		{"left", ptr(2), nil, ptr(2)},
		{"right", nil, ptr(3), ptr(3)},
		{"max", ptr(2), ptr(5), ptr(5)},
		{"max reversed", ptr(5), ptr(2), ptr(5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, got := range []*int{with(tc.a).Intersection(with(tc.b)).MinValues(), with(tc.b).Intersection(with(tc.a)).MinValues()} {
				if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
					t.Errorf("MinValues = %v, want %v", got, tc.want)
				}
			}
		})
	}
	// Through a chain of intersections with other operators, too.
	r := and(NewRequirementWithMinValues(k, corev1.NodeSelectorOpIn, ptr(2), "a", "b", "c"), notIn("c"), in("a", "b"))
	if got := r.MinValues(); got == nil || *got != 2 {
		t.Errorf("MinValues after chain = %v, want 2", got)
	}
	// The caller's int and the returned one are copies.
	n := 4
	r = NewRequirementWithMinValues(k, corev1.NodeSelectorOpExists, &n)
	n = 9
	*r.MinValues() = 7
	if got := r.MinValues(); *got != 4 {
		t.Errorf("MinValues = %d after outside changes, want 4", *got)
	}
}

func TestParseInt64MatchesStrconv(t *testing.T) {
	for _, s := range []string{
		"", "0", "-0", "+0", "7", "-7", "+7", "007", "-007", "+", "-", "++1", "+-1", "1+",
		" 1", "1 ", "1_000", "0x10", "1e3", "1.0", "١",
		maxInt, minInt, "9223372036854775808", "-9223372036854775809",
		"92233720368547758070", "00000000000000000000009223372036854775807",
	} {
		want, err := strconv.ParseInt(s, 10, 64)
		got, ok := parseInt64(s)
		if ok != (err == nil) || ok && got != want {
			t.Errorf("parseInt64(%q) = %d, %v; strconv gives %d, %v", s, got, ok, want, err)
		}
	}
}

func TestAny(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *Requirement
		want string
	}{
		{"finite: smallest", in("c", "a", "b"), "a"},
		{"empty", in(), ""},
		{"DoesNotExist", dne(), ""},
		{"Exists", exists(), "0"},
		{"NotIn skips excluded", notIn("0", "1"), "2"},
		{"Gt", gt("5"), "6"},
		{"Lt negative", lt("-3"), "-4"},
		{"Lt falls back below zero", and(lt("3"), notIn("0", "1", "2")), "-1"},
		{"single integer", and(gte("2"), lte("2")), "2"},
		{"single integer excluded: padded", and(gte("2"), lte("2"), notIn("2")), "02"},
		{"negative padded twice", and(gte("-2"), lte("-2"), notIn("-2", "-02")), "-002"},
		{"top of range", gte(maxInt), maxInt},
		{"top of range excluded", and(gte(maxInt), notIn(maxInt)), "0" + maxInt},
		{"bottom of range", lte(minInt), minInt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.Any()
			if got != tc.want {
				t.Errorf("%v: Any() = %q, want %q", tc.r, got, tc.want)
			}
			if got != "" && !tc.r.Has(got) {
				t.Errorf("%v: Any() = %q is not allowed", tc.r, got)
			}
		})
	}
}

func TestNodeSelectorRequirement(t *testing.T) {
	expr := func(op corev1.NodeSelectorOperator, v ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: k, Operator: op, Values: v}
	}
	for _, tc := range []struct {
		name string
		r    *Requirement
		want corev1.NodeSelectorRequirement
	}{
		{"In", in("b", "a"), expr(corev1.NodeSelectorOpIn, "a", "b")},
		{"NotIn", notIn("spot"), expr(corev1.NodeSelectorOpNotIn, "spot")},
		{"Exists", exists(), expr(corev1.NodeSelectorOpExists)},
		{"DoesNotExist", dne(), expr(corev1.NodeSelectorOpDoesNotExist)},
		{"DoesNotExist∩NotIn", and(dne(), notIn("a")), expr(corev1.NodeSelectorOpDoesNotExist)},
		{"unsatisfiable", and(exists(), dne()), expr(corev1.NodeSelectorOpIn)},
		{"unconstrained", notIn(), expr(corev1.NodeSelectorOpNotIn)},
		{"Exists∩NotIn keeps the exclusions", and(exists(), notIn("a")), expr(corev1.NodeSelectorOpNotIn, "a")},
		{"finite from bounds", and(in("1", "5"), gt("2")), expr(corev1.NodeSelectorOpIn, "5")},
		{"Gt", gt("3"), expr(corev1.NodeSelectorOpGt, "3")},
		{"Lt", lt("3"), expr(corev1.NodeSelectorOpLt, "3")},
		{"Gte as Gt", gte("3"), expr(corev1.NodeSelectorOpGt, "2")},
		{"Lte as Lt", lte("3"), expr(corev1.NodeSelectorOpLt, "4")},
		{"both bounds: Gt wins", and(gt("1"), lt("10"), notIn("5")), expr(corev1.NodeSelectorOpGt, "1")},
		{"whole int64 range", lte(maxInt), expr(corev1.NodeSelectorOpGt, minInt)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.NodeSelectorRequirement()
			if got.Key != tc.want.Key || got.Operator != tc.want.Operator || !slices.Equal(got.Values, tc.want.Values) {
				t.Errorf("%v: NodeSelectorRequirement() = %+v, want %+v", tc.r, got, tc.want)
			}
		})
	}
	// The values are the caller's: changing them leaves the requirement alone.
	r := in("a")
	r.NodeSelectorRequirement().Values[0] = "z"
	if !r.Has("a") || r.Has("z") {
		t.Errorf("changing NodeSelectorRequirement().Values changed the requirement: %v", r)
	}
}

func TestRequirementString(t *testing.T) {
	two := 2
	many := make([]string, 12)
	for i := range many {
		many[i] = string(rune('a' + i))
	}
	for _, tc := range []struct {
		r    *Requirement
		want string
	}{
		{NewRequirement("topology.kubernetes.io/zone", corev1.NodeSelectorOpIn, "b", "a"), "topology.kubernetes.io/zone In [a b]"},
		{NewRequirement("karpenter.sh/capacity-type", corev1.NodeSelectorOpNotIn, "spot"), "karpenter.sh/capacity-type NotIn [spot]"},
		{NewRequirement("x", corev1.NodeSelectorOpExists), "x Exists"},
		{NewRequirement("x", corev1.NodeSelectorOpDoesNotExist), "x DoesNotExist"},
		{NewRequirement("n", corev1.NodeSelectorOpGt, "3"), "n Gt 3"},
		{NewRequirement("n", OpGte, "3"), "n Gt 2"},
		{and(gt("3"), lt("10"), notIn("5")), "k Gt 3 and Lt 10 and NotIn [5]"},
		{and(exists(), notIn("a")), "k NotIn [a] and Exists"},
		{and(in("a"), in("b")), "k In []"},
		{notIn(), "k NotIn []"},
		{NewRequirementWithMinValues(k, corev1.NodeSelectorOpIn, &two, "a", "b"), "k In [a b] minValues 2"},
		{in(many...), "k In [a b c d e f g h i j and 2 more]"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestHasDoesNotAllocate(t *testing.T) {
	for _, tc := range []struct {
		r     *Requirement
		value string
	}{
		{in("a", "b", "c"), "b"},
		{in("a", "b", "c"), "d"},
		{notIn("a"), "b"},
		{gt("3"), "not-a-number"},
		{gt("3"), "99999999999999999999999"},
		{and(gt("3"), notIn("5")), "4"},
	} {
		if n := testing.AllocsPerRun(100, func() { tc.r.Has(tc.value) }); n != 0 {
			t.Errorf("%v: Has(%q) allocates %v times", tc.r, tc.value, n)
		}
	}
}

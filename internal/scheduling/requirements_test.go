package scheduling

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const (
	zone = "topology.kubernetes.io/zone"
	ct   = "karpenter.sh/capacity-type"
	cpu  = "karpenter.k8s.aws/instance-cpu"
	gpu  = "example.com/gpu"
)

func req(key string, op corev1.NodeSelectorOperator, values ...string) *Requirement {
	return NewRequirement(key, op, values...)
}

func TestNewRequirementsIntersectsDuplicates(t *testing.T) {
	r := NewRequirements(
		req(zone, corev1.NodeSelectorOpIn, "a", "b", "c"),
		req(ct, corev1.NodeSelectorOpExists),
		req(zone, corev1.NodeSelectorOpNotIn, "b"),
	)
	if got := r.Get(zone).Values(); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("zone values = %q, want [a c]", got)
	}
	if got := r.Keys(); !slices.Equal(got, []string{ct, zone}) {
		t.Errorf("Keys() = %q", got)
	}
	f := FromNodeSelectorRequirements(
		corev1.NodeSelectorRequirement{Key: cpu, Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}},
		corev1.NodeSelectorRequirement{Key: cpu, Operator: corev1.NodeSelectorOpLt, Values: []string{"9"}},
	)
	checkSet(t, f.Get(cpu), set{complement: true, allowed: []string{"3", "8"}, denied: []string{"2", "9"}})
}

func TestCompatible(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a, b    Requirements
		wantKey string // "" when compatible
	}{
		{"In∩In overlap",
			NewRequirements(req(zone, corev1.NodeSelectorOpIn, "a", "b")),
			NewRequirements(req(zone, corev1.NodeSelectorOpIn, "b", "c")), ""},
		{"In∩In disjoint",
			NewRequirements(req(zone, corev1.NodeSelectorOpIn, "a")),
			NewRequirements(req(zone, corev1.NodeSelectorOpIn, "b", "c")), zone},
		{"In∩NotIn all excluded",
			NewRequirements(req(ct, corev1.NodeSelectorOpIn, "spot")),
			NewRequirements(req(ct, corev1.NodeSelectorOpNotIn, "spot")), ct},
		{"NotIn∩NotIn",
			NewRequirements(req(ct, corev1.NodeSelectorOpNotIn, "spot")),
			NewRequirements(req(ct, corev1.NodeSelectorOpNotIn, "on-demand")), ""},
		{"Exists∩In",
			NewRequirements(req(zone, corev1.NodeSelectorOpExists)),
			NewRequirements(req(zone, corev1.NodeSelectorOpIn, "a")), ""},
		{"keys on one side only",
			NewRequirements(req(zone, corev1.NodeSelectorOpIn, "a")),
			NewRequirements(req(ct, corev1.NodeSelectorOpDoesNotExist)), ""},
		{"empty side", Requirements{}, NewRequirements(req(zone, corev1.NodeSelectorOpIn, "a")), ""},
		{"DoesNotExist∩NotIn: both allow absence",
			NewRequirements(req(gpu, corev1.NodeSelectorOpDoesNotExist)),
			NewRequirements(req(gpu, corev1.NodeSelectorOpNotIn, "a100")), ""},
		{"DoesNotExist∩DoesNotExist",
			NewRequirements(req(gpu, corev1.NodeSelectorOpDoesNotExist)),
			NewRequirements(req(gpu, corev1.NodeSelectorOpDoesNotExist)), ""},
		{"DoesNotExist∩In",
			NewRequirements(req(gpu, corev1.NodeSelectorOpDoesNotExist)),
			NewRequirements(req(gpu, corev1.NodeSelectorOpIn, "a100")), gpu},
		{"DoesNotExist∩Exists",
			NewRequirements(req(gpu, corev1.NodeSelectorOpDoesNotExist)),
			NewRequirements(req(gpu, corev1.NodeSelectorOpExists)), gpu},
		{"DoesNotExist∩Gt",
			NewRequirements(req(gpu, corev1.NodeSelectorOpDoesNotExist)),
			NewRequirements(req(gpu, corev1.NodeSelectorOpGt, "0")), gpu},
		{"DoesNotExist∩Lt",
			NewRequirements(req(gpu, corev1.NodeSelectorOpDoesNotExist)),
			NewRequirements(req(gpu, corev1.NodeSelectorOpLt, "4")), gpu},
		{"In∩Gt overlap",
			NewRequirements(req(cpu, corev1.NodeSelectorOpIn, "1", "2", "3", "4")),
			NewRequirements(req(cpu, corev1.NodeSelectorOpGt, "2")), ""},
		{"In non-integer∩Gt",
			NewRequirements(req(cpu, corev1.NodeSelectorOpIn, "large")),
			NewRequirements(req(cpu, corev1.NodeSelectorOpGt, "2")), cpu},
		{"Gt 2∩Lt 3",
			NewRequirements(req(cpu, corev1.NodeSelectorOpGt, "2")),
			NewRequirements(req(cpu, corev1.NodeSelectorOpLt, "3")), cpu},
		{"Gte 2∩Lte 2",
			NewRequirements(req(cpu, OpGte, "2")),
			NewRequirements(req(cpu, OpLte, "2")), ""},
		{"NotIn∩Gt",
			NewRequirements(req(cpu, corev1.NodeSelectorOpNotIn, "3")),
			NewRequirements(req(cpu, corev1.NodeSelectorOpGt, "2")), ""},
		{"several conflicts: smallest key",
			NewRequirements(req(zone, corev1.NodeSelectorOpIn, "a"), req(ct, corev1.NodeSelectorOpIn, "spot"), req(cpu, corev1.NodeSelectorOpIn, "2")),
			NewRequirements(req(zone, corev1.NodeSelectorOpIn, "b"), req(ct, corev1.NodeSelectorOpIn, "on-demand"), req(cpu, corev1.NodeSelectorOpIn, "4")), cpu},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, pair := range [][2]Requirements{{tc.a, tc.b}, {tc.b, tc.a}} {
				err := pair[0].Compatible(pair[1])
				var ie *IncompatibleError
				switch {
				case tc.wantKey == "" && err != nil:
					t.Errorf("Compatible(%v, %v) = %v, want nil", pair[0], pair[1], err)
				case tc.wantKey != "" && !errors.As(err, &ie):
					t.Errorf("Compatible(%v, %v) = %v, want *IncompatibleError", pair[0], pair[1], err)
				case tc.wantKey != "" && (ie.Key != tc.wantKey || ie.A != pair[0][ie.Key] || ie.B != pair[1][ie.Key]):
					t.Errorf("Compatible(%v, %v) = %+v, want key %q with A and B in argument order", pair[0], pair[1], ie, tc.wantKey)
				}
			}
			// Compatible agrees with building the intersection.
			satisfiable := true
			for _, r := range tc.a.Intersect(tc.b) {
				satisfiable = satisfiable && r.satisfiable()
			}
			if satisfiable != (tc.wantKey == "") {
				t.Errorf("Intersect satisfiable = %v, want %v", satisfiable, tc.wantKey == "")
			}
		})
	}
}

func TestCompatibleErrorText(t *testing.T) {
	for _, tc := range []struct {
		a, b *Requirement
		want string
	}{
		{req(zone, corev1.NodeSelectorOpIn, "us-east-1a"), req(zone, corev1.NodeSelectorOpIn, "us-east-1c", "us-east-1b"),
			`key "topology.kubernetes.io/zone": In [us-east-1a] and In [us-east-1b us-east-1c] cannot both be met`},
		{req(gpu, corev1.NodeSelectorOpExists), req(gpu, corev1.NodeSelectorOpDoesNotExist),
			`key "example.com/gpu": Exists and DoesNotExist cannot both be met`},
		{req(cpu, corev1.NodeSelectorOpGt, "2"), req(cpu, corev1.NodeSelectorOpLt, "3"),
			`key "karpenter.k8s.aws/instance-cpu": Gt 2 and Lt 3 cannot both be met`},
	} {
		err := NewRequirements(tc.a).Compatible(NewRequirements(tc.b))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Compatible error = %v, want %q", err, tc.want)
		}
	}
}

func TestMatches(t *testing.T) {
	labels := map[string]string{zone: "us-east-1b", ct: "spot", cpu: "4", "other": "x"}
	for _, tc := range []struct {
		name string
		r    *Requirement
		want string // "" when it matches
	}{
		{"In present", req(zone, corev1.NodeSelectorOpIn, "us-east-1a", "us-east-1b"), ""},
		{"In other value", req(zone, corev1.NodeSelectorOpIn, "us-east-1a"),
			`key "topology.kubernetes.io/zone": node label is "us-east-1b", required In [us-east-1a]`},
		{"In absent", req(gpu, corev1.NodeSelectorOpIn, "a100"),
			`key "example.com/gpu": node label is absent, required In [a100]`},
		{"NotIn present, allowed", req(ct, corev1.NodeSelectorOpNotIn, "on-demand"), ""},
		{"NotIn present, excluded", req(ct, corev1.NodeSelectorOpNotIn, "spot"),
			`key "karpenter.sh/capacity-type": node label is "spot", required NotIn [spot]`},
		{"NotIn absent", req(gpu, corev1.NodeSelectorOpNotIn, "a100"), ""},
		{"Exists present", req(zone, corev1.NodeSelectorOpExists), ""},
		{"Exists absent", req(gpu, corev1.NodeSelectorOpExists),
			`key "example.com/gpu": node label is absent, required Exists`},
		{"DoesNotExist absent", req(gpu, corev1.NodeSelectorOpDoesNotExist), ""},
		{"DoesNotExist present", req("other", corev1.NodeSelectorOpDoesNotExist),
			`key "other": node label is "x", required DoesNotExist`},
		{"Gt present", req(cpu, corev1.NodeSelectorOpGt, "2"), ""},
		{"Gt too small", req(cpu, corev1.NodeSelectorOpGt, "4"),
			`key "karpenter.k8s.aws/instance-cpu": node label is "4", required Gt 4`},
		{"Gt non-integer", req("other", corev1.NodeSelectorOpGt, "0"),
			`key "other": node label is "x", required Gt 0`},
		{"Gt absent", req(gpu, corev1.NodeSelectorOpGt, "0"),
			`key "example.com/gpu": node label is absent, required Gt 0`},
		{"Lt absent", req(gpu, corev1.NodeSelectorOpLt, "9"),
			`key "example.com/gpu": node label is absent, required Lt 9`},
		{"Exists∩NotIn absent", req(gpu, corev1.NodeSelectorOpExists).Intersection(req(gpu, corev1.NodeSelectorOpNotIn, "a100")),
			`key "example.com/gpu": node label is absent, required NotIn [a100] and Exists`},
		{"unconstrained absent", unconstrained(gpu), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := NewRequirements(tc.r).Matches(labels)
			if tc.want == "" {
				if err != nil {
					t.Errorf("Matches = %v, want nil", err)
				}
				return
			}
			var ie *IncompatibleError
			if !errors.As(err, &ie) || err.Error() != tc.want || ie.Key != tc.r.Key() || ie.A != tc.r {
				t.Errorf("Matches = %v, want %q", err, tc.want)
			}
		})
	}
	// Several failures: the smallest key, every time.
	r := NewRequirements(req(zone, corev1.NodeSelectorOpIn, "a"), req(ct, corev1.NodeSelectorOpIn, "on-demand"), req(gpu, corev1.NodeSelectorOpExists))
	for range 5 {
		var ie *IncompatibleError
		if err := r.Matches(labels); !errors.As(err, &ie) || ie.Key != gpu {
			t.Fatalf("Matches = %v, want key %q", err, gpu)
		}
	}
	if err := (Requirements{}).Matches(nil); err != nil {
		t.Errorf("empty Requirements Matches = %v", err)
	}
}

func TestLabels(t *testing.T) {
	r := NewRequirements(
		req(zone, corev1.NodeSelectorOpIn, "a"),
		req(ct, corev1.NodeSelectorOpIn, "spot", "on-demand"),
		req(ct, corev1.NodeSelectorOpNotIn, "spot"),
		req("two", corev1.NodeSelectorOpIn, "a", "b"),
		req("notin", corev1.NodeSelectorOpNotIn, "a"),
		req("exists", corev1.NodeSelectorOpExists),
		req("dne", corev1.NodeSelectorOpDoesNotExist),
		req("empty", corev1.NodeSelectorOpIn),
		req(cpu, OpGte, "2"), req(cpu, OpLte, "2"),
	)
	want := map[string]string{zone: "a", ct: "on-demand"}
	got := r.Labels()
	if len(got) != len(want) || got[zone] != "a" || got[ct] != "on-demand" {
		t.Errorf("Labels() = %v, want %v", got, want)
	}
	if got := (Requirements{}).Labels(); got == nil || len(got) != 0 {
		t.Errorf("empty Labels() = %#v, want empty map", got)
	}
	// FromLabels and Labels undo each other.
	labels := map[string]string{zone: "a", ct: "spot"}
	if got := FromLabels(labels).Labels(); len(got) != 2 || got[zone] != "a" || got[ct] != "spot" {
		t.Errorf("FromLabels(%v).Labels() = %v", labels, got)
	}
}

// sameSet reports whether a and b allow the same values and absence, by
// comparing their normalized form.
func sameSet(a, b *Requirement) bool {
	return a.complement == b.complement && slices.Equal(a.values, b.values) &&
		a.integer == b.integer && a.lo == b.lo && a.hi == b.hi && a.allowsAbsent == b.allowsAbsent
}

func TestNodeSelectorRequirementsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Requirements
	}{
		{"In", NewRequirements(req(zone, corev1.NodeSelectorOpIn, "b", "a"))},
		{"NotIn", NewRequirements(req(ct, corev1.NodeSelectorOpNotIn, "spot"))},
		{"Exists and DoesNotExist", NewRequirements(req(zone, corev1.NodeSelectorOpExists), req(gpu, corev1.NodeSelectorOpDoesNotExist))},
		{"Gt", NewRequirements(req(cpu, corev1.NodeSelectorOpGt, "3"))},
		{"Gte∩Lte", NewRequirements(req(cpu, OpGte, "2"), req(cpu, OpLte, "8"))},
		{"Lte", NewRequirements(req(cpu, OpLte, "-8"))},
		{"Gt∩Lt∩NotIn", NewRequirements(req(cpu, corev1.NodeSelectorOpGt, "1"), req(cpu, corev1.NodeSelectorOpLt, "9"), req(cpu, corev1.NodeSelectorOpNotIn, "4", "x"))},
		{"Exists∩NotIn", NewRequirements(req(ct, corev1.NodeSelectorOpExists), req(ct, corev1.NodeSelectorOpNotIn, "spot"))},
		{"DoesNotExist∩NotIn", NewRequirements(req(gpu, corev1.NodeSelectorOpDoesNotExist), req(gpu, corev1.NodeSelectorOpNotIn, "a"))},
		{"unsatisfiable", NewRequirements(req(gpu, corev1.NodeSelectorOpExists), req(gpu, corev1.NodeSelectorOpDoesNotExist))},
		{"mixed", NewRequirements(
			req(zone, corev1.NodeSelectorOpIn, "a", "b"),
			req(ct, corev1.NodeSelectorOpNotIn, "spot"),
			req(cpu, corev1.NodeSelectorOpIn, "2", "4", "8"), req(cpu, corev1.NodeSelectorOpGt, "2"),
		)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exprs := tc.r.NodeSelectorRequirements()
			if !slices.IsSortedFunc(exprs, func(a, b corev1.NodeSelectorRequirement) int { return strings.Compare(a.Key, b.Key) }) {
				t.Errorf("NodeSelectorRequirements() not sorted by key: %v", exprs)
			}
			back := FromNodeSelectorRequirements(exprs...)
			if !slices.Equal(back.Keys(), tc.r.Keys()) {
				t.Fatalf("keys after round trip = %q, want %q", back.Keys(), tc.r.Keys())
			}
			for key, want := range tc.r {
				if got := back[key]; !sameSet(got, want) {
					t.Errorf("round trip of %v gave %v (via %v)", want, got, exprs)
				}
			}
		})
	}
	// A requirement that constrains nothing is left out; Get gives it back.
	r := NewRequirements(req(zone, corev1.NodeSelectorOpNotIn), req(ct, corev1.NodeSelectorOpIn, "spot"))
	exprs := r.NodeSelectorRequirements()
	if len(exprs) != 1 || exprs[0].Key != ct {
		t.Errorf("NodeSelectorRequirements() = %v, want only %s", exprs, ct)
	}
	if !sameSet(FromNodeSelectorRequirements(exprs...).Get(zone), r.Get(zone)) {
		t.Errorf("unconstrained key changed in round trip")
	}
}

func TestCopyAndIntersectLeaveTheOriginalAlone(t *testing.T) {
	orig := NewRequirements(req(zone, corev1.NodeSelectorOpIn, "a", "b"))
	before := orig.String()

	c := orig.Copy()
	c.Add(req(zone, corev1.NodeSelectorOpIn, "a"), req(ct, corev1.NodeSelectorOpIn, "spot"))
	if got := c.String(); got != "karpenter.sh/capacity-type In [spot], topology.kubernetes.io/zone In [a]" {
		t.Errorf("copy after Add = %q", got)
	}

	other := NewRequirements(req(zone, corev1.NodeSelectorOpNotIn, "b"), req(gpu, corev1.NodeSelectorOpDoesNotExist))
	otherBefore := other.String()
	i := orig.Intersect(other)
	if got := i.String(); got != "example.com/gpu DoesNotExist, topology.kubernetes.io/zone In [a]" {
		t.Errorf("Intersect = %q", got)
	}
	if orig.String() != before || other.String() != otherBefore {
		t.Errorf("inputs changed: %q, %q", orig, other)
	}
}

func TestGet(t *testing.T) {
	r := NewRequirements(req(zone, corev1.NodeSelectorOpIn, "a"))
	if got := r.Get(zone); got != r[zone] {
		t.Errorf("Get(zone) = %v, want the stored requirement", got)
	}
	if r.Has(ct) || !r.Has(zone) {
		t.Errorf("Has: zone %v, capacity type %v", r.Has(zone), r.Has(ct))
	}
	missing := r.Get(ct)
	checkSet(t, missing, set{complement: true, absent: true, allowed: []string{"spot", ""}})
	if missing.Key() != ct || missing.String() != "karpenter.sh/capacity-type NotIn []" {
		t.Errorf("Get(missing) = %v", missing)
	}
	if r.Has(ct) {
		t.Errorf("Get added the missing key")
	}
	// Intersecting with what Get returns changes nothing.
	if !sameSet(r[zone].Intersection(Requirements{}.Get(zone)), r[zone]) {
		t.Errorf("intersection with a missing key changed the set")
	}
}

func TestKeysAndString(t *testing.T) {
	r := NewRequirements(
		req(zone, corev1.NodeSelectorOpIn, "b", "a"),
		req(ct, corev1.NodeSelectorOpNotIn, "spot"),
		req(cpu, corev1.NodeSelectorOpGt, "3"),
		req(gpu, corev1.NodeSelectorOpDoesNotExist),
	)
	if got, want := r.Keys(), []string{gpu, cpu, ct, zone}; !slices.Equal(got, want) {
		t.Errorf("Keys() = %q, want %q", got, want)
	}
	want := "example.com/gpu DoesNotExist, karpenter.k8s.aws/instance-cpu Gt 3, karpenter.sh/capacity-type NotIn [spot], topology.kubernetes.io/zone In [a b]"
	if got := r.String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
	if got := (Requirements{}).String(); got != "" {
		t.Errorf("empty String() = %q", got)
	}
}

func TestCompatibleAndMatchesDoNotAllocate(t *testing.T) {
	pod := NewRequirements(req(zone, corev1.NodeSelectorOpIn, "a", "b"), req(cpu, corev1.NodeSelectorOpGt, "2"), req(gpu, corev1.NodeSelectorOpDoesNotExist))
	pool := NewRequirements(req(zone, corev1.NodeSelectorOpExists), req(cpu, corev1.NodeSelectorOpLt, "64"), req(gpu, corev1.NodeSelectorOpNotIn, "a100"), req(ct, corev1.NodeSelectorOpIn, "spot"))
	labels := map[string]string{zone: "a", cpu: "4", ct: "spot"}
	if n := testing.AllocsPerRun(100, func() {
		if pod.Compatible(pool) != nil {
			panic("incompatible")
		}
	}); n != 0 {
		t.Errorf("Compatible allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if pod.Matches(labels) != nil {
			panic("no match")
		}
	}); n != 0 {
		t.Errorf("Matches allocates %v times", n)
	}
}

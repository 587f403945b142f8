package scheduling

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// fuzzOps are the operators the fuzzer picks from by index; the last one is
// unknown on purpose.
var fuzzOps = []corev1.NodeSelectorOperator{
	corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
	corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt,
	OpGte, OpLte, "Bogus",
}

// fuzzRequirement builds a requirement from an operator byte and value
// lists, so that the fuzzer also reaches compound sets such as Gt∩NotIn:
// op%9 picks the first operator and op/9%10 a second one that is intersected
// in (0 = none, i = fuzzOps[i-1]); values holds a comma-separated list for
// each, split by ";" ("a,b;c"; "" = no values). It also returns the values,
// as probes.
func fuzzRequirement(op uint8, values string) (*Requirement, []string) {
	lists := strings.SplitN(values, ";", 2)
	split := func(i int) []string {
		if i >= len(lists) || lists[i] == "" {
			return nil
		}
		return strings.Split(lists[i], ",")
	}
	first, second := split(0), split(1)
	r := NewRequirement(k, fuzzOps[int(op)%len(fuzzOps)], first...)
	if i := int(op) / len(fuzzOps) % 10; i > 0 {
		r = r.Intersection(NewRequirement(k, fuzzOps[i-1], second...))
	}
	return r, append(first, second...)
}

// FuzzIntersectionCommutes checks that a∩b and b∩a allow the same values and
// absence, that they allow exactly what both sides allow, that intersects
// agrees with building the intersection, and that Any picks an allowed value.
// Run with: go test -fuzz FuzzIntersectionCommutes ./internal/scheduling
func FuzzIntersectionCommutes(f *testing.F) {
	f.Add(uint8(0), "a,b,c", uint8(1), "b", "a")         // In ∩ NotIn
	f.Add(uint8(0), "1,2,3,4", uint8(4), "2", "3")       // In ∩ Gt
	f.Add(uint8(4), "2", uint8(5), "3", "2")             // Gt ∩ Lt
	f.Add(uint8(6), "2", uint8(7), "2", "02")            // Gte ∩ Lte
	f.Add(uint8(2), "", uint8(3), "", "")                // Exists ∩ DoesNotExist
	f.Add(uint8(3), "", uint8(1), "x", "x")              // DoesNotExist ∩ NotIn
	f.Add(uint8(1), "2,02,+2", uint8(6), "2", "+2")      // NotIn ∩ Gte, all spellings of 2
	f.Add(uint8(4+9*2), "1;3,x", uint8(5), "9", "3")     // Gt∩NotIn ∩ Lt
	f.Add(uint8(6+9*8), "2;2", uint8(1), "2", "02")      // Gte∩Lte ∩ NotIn: only padded spellings left
	f.Add(uint8(2+9*4), ";", uint8(0+9*2), "a,b;b", "a") // Exists∩DoesNotExist ∩ In∩NotIn
	f.Add(uint8(7), "9223372036854775807", uint8(1), "9223372036854775807", "-9223372036854775808")
	f.Fuzz(func(t *testing.T, opA uint8, valuesA string, opB uint8, valuesB string, probe string) {
		a, va := fuzzRequirement(opA, valuesA)
		b, vb := fuzzRequirement(opB, valuesB)
		ab, ba := a.Intersection(b), b.Intersection(a)

		probes := append([]string{probe, "", "0", "1", "2", "3", "-1", "02", "+2", "a"}, va...)
		for _, p := range append(probes, vb...) {
			want := a.Has(p) && b.Has(p)
			if ab.Has(p) != want || ba.Has(p) != want {
				t.Fatalf("Has(%q): %v∩%v = %v, %v∩%v = %v, both sides = %v", p, a, b, ab.Has(p), b, a, ba.Has(p), want)
			}
		}
		wantAbsent := a.allowsAbsent && b.allowsAbsent
		if ab.allowsAbsent != wantAbsent || ba.allowsAbsent != wantAbsent {
			t.Fatalf("absence: %v∩%v = %v, %v∩%v = %v, want %v", a, b, ab.allowsAbsent, b, a, ba.allowsAbsent, wantAbsent)
		}
		if !sameSet(ab, ba) || ab.Len() != ba.Len() || ab.Any() != ba.Any() || ab.String() != ba.String() {
			t.Fatalf("%v∩%v = %v, but %v∩%v = %v", a, b, ab, b, a, ba)
		}
		if got := intersects(a, b); got != ab.satisfiable() || got != intersects(b, a) {
			t.Fatalf("intersects(%v, %v) = %v, but the intersection %v is satisfiable: %v", a, b, got, ab, ab.satisfiable())
		}
		if v := ab.Any(); ab.Len() > 0 && !ab.Has(v) {
			t.Fatalf("%v: Any() = %q is not allowed", ab, v)
		}
		_ = ab.NodeSelectorRequirement()
	})
}

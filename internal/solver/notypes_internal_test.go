package solver

import "testing"

// closest suggests a spelling only when one known value is clearly the one
// meant: near enough for a typo, and nearer than every other.
func TestClosest(t *testing.T) {
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	for _, tc := range []struct {
		typed string
		known []string
		want  string
	}{
		{"m5.xlarg", []string{"m5.large", "m5.xlarge", "m5.2xlarge"}, "m5.xlarge"},
		{"m9", []string{"c5", "m5", "m6g", "r5"}, "m5"},
		{"us-east-1z", zones, ""},             // as near us-east-1a as us-east-1b: no guess
		{"us-east-1a", zones, ""},             // known: nothing to suggest
		{"m5.huge", []string{"m5.large"}, ""}, // three edits in seven letters is no typo
	} {
		if got := closest(tc.typed, tc.known); got != tc.want {
			t.Errorf("closest(%q, %v) = %q, want %q", tc.typed, tc.known, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"m5.huge", "m5.large", 3}, {"m5.xlarg", "m5.xlarge", 1}, {"kitten", "sitting", 3},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

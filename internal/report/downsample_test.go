package report

import (
	"cmp"
	"math"
	"slices"
	"testing"
)

func TestDownsampleKeepsPeaksEndsAndOrder(t *testing.T) {
	spike := make([]point, 100_000)
	for i := range spike {
		spike[i] = point{float64(i), math.Sin(float64(i) / 500)}
	}
	spike[31_337].Y = 1000 // one sample of a huge pending-pods peak
	spike[77_777].Y = -50

	for _, tc := range []struct {
		name  string
		pts   []point
		limit int
	}{
		{"empty", nil, maxPoints},
		{"one", []point{{0, 5}}, maxPoints},
		{"under the limit", spike[:maxPoints], maxPoints},
		{"one over the limit", spike[:maxPoints+1], maxPoints},
		{"a week at 6s", spike, maxPoints},
		{"tiny limit", spike, 1},
		{"odd limit", spike, 101},
		{"all equal", make([]point, 5000), maxPoints},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := downsample(tc.pts, tc.limit)
			if len(tc.pts) <= max(tc.limit, 4) {
				if !slices.Equal(got, tc.pts) {
					t.Fatalf("changed a series within the limit")
				}
				return
			}
			if len(got) > max(tc.limit, 4) {
				t.Errorf("%d points, limit %d", len(got), tc.limit)
			}
			if got[0] != tc.pts[0] || got[len(got)-1] != tc.pts[len(tc.pts)-1] {
				t.Errorf("first or last point lost")
			}
			if !slices.IsSortedFunc(got, func(a, b point) int { return cmp.Compare(a.X, b.X) }) {
				t.Errorf("points out of order")
			}
			if maxY(got) != maxY(tc.pts) || -maxY(negate(got)) != -maxY(negate(tc.pts)) {
				t.Errorf("range %v..%v, want %v..%v", -maxY(negate(got)), maxY(got), -maxY(negate(tc.pts)), maxY(tc.pts))
			}
			if again := downsample(tc.pts, tc.limit); !slices.Equal(again, got) {
				t.Errorf("two calls gave different points")
			}
		})
	}
}

func maxY(pts []point) float64 {
	m := math.Inf(-1)
	for _, p := range pts {
		m = max(m, p.Y)
	}
	return m
}

func negate(pts []point) []point {
	out := make([]point, len(pts))
	for i, p := range pts {
		out[i] = point{p.X, -p.Y}
	}
	return out
}

func nan() float64 { return math.NaN() }

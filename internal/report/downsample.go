package report

// maxPoints bounds the points of one series: a week at 10-second samples
// would otherwise be 60,000 points a line, a page of megabytes that a browser
// draws slowly, with far more points than the chart has pixels.
const maxPoints = 2000

// point is one value of a series: X in seconds since the start of the run.
type point struct{ X, Y float64 }

// downsample returns at most limit points of pts (which are in X order). It
// keeps the first and last points and, from each of equal buckets between
// them, the lowest and the highest point in their order. Averaging would hide
// what a reader looks for — the peak of pending pods, the one hour the cluster
// ran 80 nodes — so every bucket's extremes survive, and the result depends
// only on pts.
func downsample(pts []point, limit int) []point {
	if limit < 4 {
		limit = 4
	}
	if len(pts) <= limit {
		return pts
	}
	inner := pts[1 : len(pts)-1]
	buckets := (limit - 2) / 2
	out := make([]point, 0, limit)
	out = append(out, pts[0])
	for b := range buckets {
		// Integer bounds spread the remainder evenly and need no float maths.
		lo, hi := b*len(inner)/buckets, (b+1)*len(inner)/buckets
		if lo == hi {
			continue
		}
		minI, maxI := lo, lo
		for i := lo + 1; i < hi; i++ {
			if inner[i].Y < inner[minI].Y {
				minI = i
			}
			if inner[i].Y > inner[maxI].Y {
				maxI = i
			}
		}
		first, second := min(minI, maxI), max(minI, maxI)
		out = append(out, inner[first])
		if second != first {
			out = append(out, inner[second])
		}
	}
	return append(out, pts[len(pts)-1])
}

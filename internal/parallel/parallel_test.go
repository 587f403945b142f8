package parallel

import (
	"sync/atomic"
	"testing"
)

// TestDoRunsEachOnceWithinTheBound: every index runs exactly once, and no
// more than the bound run at the same time.
func TestDoRunsEachOnceWithinTheBound(t *testing.T) {
	for _, tc := range []struct{ n, workers, wantMax int }{{0, 4, 0}, {10, 3, 3}, {5, 0, 1}, {3, 8, 3}} {
		var running, peak atomic.Int32
		seen := make([]atomic.Int32, tc.n)
		Do(tc.n, tc.workers, func(i int) {
			now := running.Add(1)
			for {
				p := peak.Load()
				if now <= p || peak.CompareAndSwap(p, now) {
					break
				}
			}
			seen[i].Add(1)
			running.Add(-1)
		})
		for i := range seen {
			if got := seen[i].Load(); got != 1 {
				t.Errorf("n=%d workers=%d: index %d ran %d times", tc.n, tc.workers, i, got)
			}
		}
		if got := int(peak.Load()); got > tc.wantMax {
			t.Errorf("n=%d workers=%d: %d ran at once, want at most %d", tc.n, tc.workers, got, tc.wantMax)
		}
	}
}

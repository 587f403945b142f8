package scale

import (
	"testing"
	"time"
)

func TestDefaultWaitRunning(t *testing.T) {
	for _, tc := range []struct {
		pods int
		want time.Duration
	}{
		{2000, 5 * time.Minute},
		{10000, 5 * time.Minute},
		{20000, 10 * time.Minute},
		{40000, 20 * time.Minute},
	} {
		if got := defaultWaitRunning(tc.pods); got != tc.want {
			t.Errorf("defaultWaitRunning(%d) = %s, want %s", tc.pods, got, tc.want)
		}
	}
}

package scale

import (
	"testing"
	"time"
)

func TestIdealBatchClose(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name                  string
		podAt, lastAt, window time.Duration
		want                  time.Duration
	}{
		{name: "first pod waits a whole window", podAt: 0, lastAt: -1, window: 10 * s, want: 10 * s},
		{name: "a pod in the stream waits for its batch's end", podAt: 13 * s, lastAt: -1, window: 10 * s, want: 20 * s},
		{name: "a pod on a boundary opens the next batch", podAt: 20 * s, lastAt: -1, window: 10 * s, want: 30 * s},
		{name: "the stream ended: idle closes the batch", podAt: 21 * s, lastAt: 22 * s, window: 10 * s, want: 23 * s},
		{name: "the stream ended just before the window did", podAt: 28 * s, lastAt: 29500 * time.Millisecond, window: 10 * s, want: 30 * s},
		{name: "shorter window", podAt: 7 * s, lastAt: -1, window: 3 * s, want: 9 * s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := idealBatchClose(tc.podAt, tc.lastAt, tc.window, s); got != tc.want {
				t.Errorf("idealBatchClose(%s, %s, %s, 1s) = %s, want %s", tc.podAt, tc.lastAt, tc.window, got, tc.want)
			}
		})
	}
}

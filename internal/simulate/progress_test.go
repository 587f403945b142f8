package simulate

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgressBarOnlyForRunsOverASecond(t *testing.T) {
	cases := []struct {
		name string
		wall time.Duration // wall time passed at each report
		want []string      // substrings of the output; none for empty output
	}{
		{name: "a quick run draws nothing", wall: 100 * time.Millisecond},
		{name: "a slow run draws the bar and clears it", wall: 2 * time.Second,
			want: []string{"simulating [####################....................] 12h0m0s of 24h0m0s", "\r\033[K"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Unix(0, 0)
			var out bytes.Buffer
			bar := progressBar(&out, func() time.Time { return clock })
			clock = clock.Add(tc.wall)
			bar(12*time.Hour, 24*time.Hour)
			bar(24*time.Hour, 24*time.Hour)
			if len(tc.want) == 0 && out.Len() > 0 {
				t.Errorf("drew %q", out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output %q lacks %q", out.String(), w)
				}
			}
		})
	}
}

package report

import (
	"slices"
	"testing"
	"time"
)

func TestTimeTicksUseReadableSteps(t *testing.T) {
	for _, tc := range []struct {
		span time.Duration
		want []string
	}{
		{24 * time.Hour, []string{"0h", "3h", "6h", "9h", "12h", "15h", "18h", "21h", "24h"}},
		{90 * time.Minute, []string{"0m", "15m", "30m", "45m", "1h", "1h15m", "1h30m"}},
		{10 * time.Minute, []string{"0m", "2m", "4m", "6m", "8m", "10m"}},
		{45 * time.Second, []string{"0s", "10s", "20s", "30s", "40s"}},
		{7 * 24 * time.Hour, []string{"0d", "1d", "2d", "3d", "4d", "5d", "6d", "7d"}},
		{6*time.Hour + 20*time.Minute, []string{"0h", "1h", "2h", "3h", "4h", "5h", "6h"}},
		{0, []string{"0m"}},
	} {
		t.Run(tc.span.String(), func(t *testing.T) {
			var got []string
			for _, tk := range timeTicks(tc.span) {
				got = append(got, tk.Label)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("timeTicks(%v) = %q, want %q", tc.span, got, tc.want)
			}
		})
	}
}

func TestTimeTicksStayFewOnVeryLongRuns(t *testing.T) {
	ticks := timeTicks(400 * 24 * time.Hour)
	if len(ticks) > maxTimeTicks || len(ticks) < 2 {
		t.Errorf("%d ticks for 400 days, want 2..%d", len(ticks), maxTimeTicks)
	}
}

func TestValueAxisStartsAtZeroWithRoundTicks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		max     float64
		integer bool
		format  func(float64) string
		want    []string
	}{
		{"all zero", 0, true, formatCount, []string{"0", "1"}},
		{"few nodes", 3, true, formatCount, []string{"0", "1", "2", "3"}},
		{"many nodes", 42, true, formatCount, []string{"0", "10", "20", "30", "40", "50"}},
		{"dollars", 4.22, false, formatDollars, []string{"$0", "$1", "$2", "$3", "$4", "$5"}},
		{"cents", 0.37, false, formatDollars, []string{"$0", "$0.10", "$0.20", "$0.30", "$0.40"}},
		{"percent", 100, false, formatPercent, []string{"0%", "20%", "40%", "60%", "80%", "100%"}},
		{"not a number", nan(), false, formatCount, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			axis := newValueAxis(tc.max, tc.integer, tc.format)
			var got []string
			for _, tk := range axis.Ticks {
				got = append(got, tk.Label)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("labels %q, want %q", got, tc.want)
			}
			if tc.max > 0 && axis.Max < tc.max {
				t.Errorf("axis ends at %v, below the data's %v", axis.Max, tc.max)
			}
		})
	}
}

func TestAlignedAxisSharesTheGridLines(t *testing.T) {
	for _, tc := range []struct {
		max       float64
		intervals int
		want      []string
	}{
		{250, 5, []string{"0", "50", "100", "150", "200", "250"}},
		{260, 5, []string{"0", "100", "200", "300", "400", "500"}},
		{3, 1, []string{"0", "5"}},
		{0, 3, []string{"0", "1", "2", "3"}},
		{7, 0, []string{"0", "10"}},
	} {
		axis := alignedAxis(tc.max, tc.intervals, true, formatCount)
		var got []string
		for _, tk := range axis.Ticks {
			got = append(got, tk.Label)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("alignedAxis(%v, %d) = %q, want %q", tc.max, tc.intervals, got, tc.want)
		}
	}
}

func TestCompactDurationDropsZeroUnits(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                 "0s",
		24 * time.Hour:                    "24h",
		90 * time.Minute:                  "1h30m",
		2*time.Minute + 5*time.Second:     "2m5s",
		time.Hour + 3*time.Second:         "1h3s",
		-(5 * time.Minute):                "-5m",
		1500 * time.Millisecond:           "2s",
		250 * time.Millisecond:            "250ms",
		26*time.Hour + 59*time.Minute + 0: "26h59m",
		7 * 24 * time.Hour:                "7d",
		50*time.Hour + 30*time.Minute:     "2d2h30m",
	} {
		if got := compactDuration(d); got != want {
			t.Errorf("compactDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

package budget

import (
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  Rate
		err   string
	}{
		{"3/1h", Rate{3, time.Hour}, ""},
		{"0/30m", Rate{0, 30 * time.Minute}, ""},
		{"10/1h30m", Rate{10, 90 * time.Minute}, ""},
		{"3", Rate{}, `want "N/WINDOW"`},
		{"3/", Rate{}, "WINDOW a duration"},
		{"/1h", Rate{}, "N a count"},
		{"-1/1h", Rate{}, "N a count"},
		{"3/1d", Rate{}, "WINDOW a duration"},
		{"3/0s", Rate{}, "longer than 0"},
		{"3/-1h", Rate{}, "longer than 0"},
	} {
		got, err := ParseRate(tc.value)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tc.value, got, err, tc.want)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseRate(%q) error = %v; want one saying %q", tc.value, err, tc.err)
		}
	}
}

func TestRateCountsStartsWithinTrailingWindow(t *testing.T) {
	now := at(2, 12, 0, 0)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, tc := range []struct {
		name    string
		rate    Rate
		started []time.Time
		want    RateState
	}{
		{"none started", Rate{3, time.Hour}, nil, RateState{Remaining: 3}},
		{"old starts do not count", Rate{3, time.Hour}, []time.Time{ago(2 * time.Hour), ago(time.Hour)}, RateState{Remaining: 3}},
		{"recent starts count", Rate{3, time.Hour}, []time.Time{ago(50 * time.Minute), ago(10 * time.Minute)},
			RateState{Started: 2, Remaining: 1, Freed: now.Add(10 * time.Minute)}},
		{"full: the slot frees when enough starts leave", Rate{2, time.Hour}, []time.Time{ago(50 * time.Minute), ago(40 * time.Minute), ago(10 * time.Minute)},
			RateState{Started: 3, Remaining: 0, Freed: now.Add(20 * time.Minute)}},
		{"starts in the future count", Rate{1, time.Hour}, []time.Time{now.Add(time.Minute)},
			RateState{Started: 1, Remaining: 0, Freed: now.Add(61 * time.Minute)}},
		{"zero allows none, ever", Rate{0, time.Hour}, []time.Time{ago(time.Minute)}, RateState{Started: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.Rate = tc.rate
			if got := tc.rate.At(tc.started, now); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

package budget

import (
	"slices"
	"strings"
	"time"
)

// StartsAnnotation is where a NodePool with a disruption rate keeps when
// its disruptions within the rate's window started, as RFC 3339 times
// separated by commas. The rate counts starts whose nodes may be long gone,
// so memory alone would forget them when the controller restarts or
// another replica takes the lead, and let a new window's worth start at
// once. Only nodewright writes it.
const StartsAnnotation = "nodewright.dev/disruption-starts"

// EncodeStarts writes starts for StartsAnnotation, oldest first, to the
// second.
func EncodeStarts(starts []time.Time) string {
	out := make([]string, 0, len(starts))
	for _, t := range SortedStarts(starts) {
		out = append(out, t.UTC().Format(time.RFC3339))
	}
	return strings.Join(out, ",")
}

// DecodeStarts reads StartsAnnotation. An entry that is not an RFC 3339
// time is skipped: the annotation is nodewright's own bookkeeping, and a
// hand edit must not stop the loop.
func DecodeStarts(v string) []time.Time {
	var out []time.Time
	for _, s := range strings.Split(v, ",") {
		if t, err := time.Parse(time.RFC3339, strings.TrimSpace(s)); err == nil {
			out = append(out, t)
		}
	}
	return out
}

// SortedStarts is starts truncated to the second, sorted, without repeats.
func SortedStarts(starts []time.Time) []time.Time {
	out := make([]time.Time, 0, len(starts))
	for _, t := range starts {
		out = append(out, t.Truncate(time.Second))
	}
	slices.SortFunc(out, time.Time.Compare)
	return slices.CompactFunc(out, time.Time.Equal)
}

// RateWindow is the window of a NodePool's disruption rate; ok is false
// when it has none or it does not parse.
func RateWindow(annotations map[string]string) (window time.Duration, ok bool) {
	r, has, err := annotatedRate(annotations)
	if !has || err != nil {
		return 0, false
	}
	return r.Window, true
}

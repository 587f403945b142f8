package report

import (
	"math"
	"strconv"
	"time"
)

// tick is one labelled position on an axis, in data units.
type tick struct {
	Value float64
	Label string
}

// timeSteps are the tick spacings a reader counts in without effort; anything
// else ("every 37 minutes") makes the axis harder to read than no axis.
var timeSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour,
}

// maxTimeTicks keeps labels like "18h" from touching at the chart's width.
const maxTimeTicks = 9

// timeTicks labels [0, span] at the smallest readable step that needs no more
// than maxTimeTicks ticks.
func timeTicks(span time.Duration) []tick {
	if span <= 0 {
		return []tick{{0, formatOffset(0, time.Minute)}}
	}
	step := timeSteps[len(timeSteps)-1]
	for _, s := range timeSteps {
		if span/s+1 <= maxTimeTicks {
			step = s
			break
		}
	}
	// Longer than the largest step allows: widen it in whole multiples.
	for span/step+1 > maxTimeTicks {
		step *= 2
	}
	var ticks []tick
	for at := time.Duration(0); at <= span; at += step {
		ticks = append(ticks, tick{at.Seconds(), formatOffset(at, step)})
	}
	return ticks
}

// formatOffset writes a time since the start of the run as briefly as the
// axis's step allows: "12h" on a day-long run, "1h30m" or "45m" on a short
// one, never "12h0m0s".
func formatOffset(d, step time.Duration) string {
	switch {
	case d == 0 && step%(24*time.Hour) == 0:
		return "0d"
	case d == 0 && step >= time.Hour:
		return "0h"
	case d == 0 && step >= time.Minute:
		return "0m"
	case d == 0:
		return "0s"
	case step%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case step%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return compactDuration(d)
}

// compactDuration is time.Duration.String without zero units: "1h30m",
// "2m5s", "7d".
func compactDuration(d time.Duration) string {
	if d < 0 {
		return "-" + compactDuration(-d)
	}
	if d < time.Second {
		return d.String()
	}
	d = d.Round(time.Second)
	h, m, s := int64(d/time.Hour), int64(d%time.Hour/time.Minute), int64(d%time.Minute/time.Second)
	out := ""
	// Hours up to two days read at a glance ("36h"); a week does not ("168h").
	if h >= 48 {
		out = strconv.FormatInt(h/24, 10) + "d"
		h %= 24
	}
	if h > 0 {
		out += strconv.FormatInt(h, 10) + "h"
	}
	if m > 0 {
		out += strconv.FormatInt(m, 10) + "m"
	}
	if s > 0 || out == "" {
		out += strconv.FormatInt(s, 10) + "s"
	}
	return out
}

// valueAxis is a y axis starting at zero: the charts compare amounts, and an
// axis that starts elsewhere makes a one-node change look like a doubling.
type valueAxis struct {
	Max   float64
	Ticks []tick
}

// newValueAxis covers [0, max] with about five ticks at 1, 2 or 5 times a
// power of ten. integer axes (nodes, pods) never get fractional ticks; format
// writes a tick's label.
func newValueAxis(max float64, integer bool, format func(float64) string) valueAxis {
	max = positive(max)
	step := axisStep(max/5, integer)
	return axisOf(step, int(math.Ceil(max/step-1e-9)), format)
}

// alignedAxis covers [0, max] in exactly intervals steps, so that a chart's
// right-hand axis puts its ticks on the left-hand axis's grid lines.
func alignedAxis(max float64, intervals int, integer bool, format func(float64) string) valueAxis {
	intervals = int(math.Max(1, float64(intervals)))
	return axisOf(axisStep(positive(max)/float64(intervals), integer), intervals, format)
}

// positive gives an all-zero or broken series an axis of [0, 1], with its line
// on 0, instead of dividing by zero.
func positive(max float64) float64 {
	if !(max > 0) || math.IsInf(max, 0) {
		return 1
	}
	return max
}

func axisStep(raw float64, integer bool) float64 {
	step := niceStep(raw)
	if integer && step < 1 {
		step = 1
	}
	return step
}

func axisOf(step float64, intervals int, format func(float64) string) valueAxis {
	// Multiples of 0.1 are not exact in binary; round them back to the
	// step's decimals, or a label reads 0.6000000000000001.
	scale := math.Pow(10, math.Max(0, -math.Floor(math.Log10(step))))
	at := func(i int) float64 { return math.Round(float64(i)*step*scale) / scale }
	axis := valueAxis{Max: at(intervals)}
	for i := 0; i <= intervals; i++ {
		axis.Ticks = append(axis.Ticks, tick{at(i), format(at(i))})
	}
	return axis
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func formatCount(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func formatPercent(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + "%" }

// formatDollars shows cents only where the axis needs them.
func formatDollars(v float64) string {
	if v == math.Trunc(v) {
		return "$" + strconv.FormatFloat(v, 'f', 0, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 2, 64)
}

package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Every chart has the same geometry, in SVG user units; the SVG scales to the
// page's width, and equal plot areas line the charts' time axes up.
const (
	chartW     = 960
	chartH     = 220
	plotLeft   = 64
	plotRight  = 60 // room for a right-hand axis
	plotTop    = 12
	plotBottom = 28
	plotW      = chartW - plotLeft - plotRight
	plotH      = chartH - plotTop - plotBottom
)

// seriesSpec is one line of a chart: its name in the legend, its CSS class
// (which holds its colour, so dark mode can change it), and how to read it
// from a Sample.
type seriesSpec struct {
	name, class string
	value       func(Sample) float64
	// area shades under the line: only where a chart has one main series,
	// since overlapping shades hide each other.
	area bool
	// right puts the series on the chart's right-hand axis: running pods are
	// hundreds while pending pods are a handful, and on one axis the pending
	// pods a reader came to see would lie flat on zero.
	right bool
}

// chartSpec is one chart of the page.
type chartSpec struct {
	id, title string
	integer   bool
	minTop    float64 // the axis reaches at least this far (100 for percents)
	format    func(float64) string
	series    []seriesSpec
}

var charts = []chartSpec{
	{id: "nodes", title: "Nodes", integer: true, format: formatCount, series: []seriesSpec{
		{name: "nodes", class: "s-nodes", area: true, value: func(s Sample) float64 { return float64(s.Nodes) }},
	}},
	{id: "cost", title: "Cost ($/h)", format: formatDollars, series: []seriesSpec{
		{name: "$/h", class: "s-cost", area: true, value: func(s Sample) float64 { return s.CostPerHour }},
	}},
	{id: "utilization", title: "Utilization (requests / allocatable)", minTop: 100, format: formatPercent, series: []seriesSpec{
		{name: "CPU", class: "s-cpu", value: func(s Sample) float64 { return 100 * s.CPUUtilization }},
		{name: "memory", class: "s-mem", value: func(s Sample) float64 { return 100 * s.MemoryUtilization }},
	}},
	{id: "pods", title: "Pods", integer: true, format: formatCount, series: []seriesSpec{
		{name: "pending", class: "s-pending", area: true, value: func(s Sample) float64 { return float64(s.PendingPods) }},
		{name: "running (right axis)", class: "s-running", value: func(s Sample) float64 { return float64(s.RunningPods) }, right: true},
	}},
}

// chartView is what the template draws for one chart; positions are in SVG
// user units.
type chartView struct {
	ID, Title, Desc string
	W, H            int
	PlotX, PlotY    float64
	PlotW, PlotH    float64
	PlotBottom      float64
	PlotRight       float64
	MidX, MidY      float64
	XTicks          []tickView
	YTicks          []tickView
	YTicksRight     []tickView
	RightClass      string
	Series          []seriesView
	Events          []markView
	Empty           bool
}

type tickView struct {
	Pos   float64
	Label string
}

type seriesView struct {
	Name, Class string
	Points      string // a step line: each value holds until the next sample
	Area        string // the same line closed down to zero, if shaded
}

// markView is one event marker: the events of one kind that fall on the same
// pixel column share it, so a run with thousands of disruptions still draws a
// bounded number of lines.
type markView struct {
	X     float64
	Color string
	Label string
}

// buildChart lays one chart out over [0, span] of simulated time.
func buildChart(spec chartSpec, samples []Sample, span time.Duration, marks []markView) chartView {
	v := chartView{
		ID: spec.id, Title: spec.title, W: chartW, H: chartH,
		PlotX: plotLeft, PlotY: plotTop, PlotW: plotW, PlotH: plotH,
		PlotBottom: plotTop + plotH, PlotRight: plotLeft + plotW,
		MidX: plotLeft + plotW/2, MidY: plotTop + plotH/2,
		Events: marks, Empty: len(samples) == 0,
	}
	spanS := span.Seconds()
	for _, t := range timeTicks(span) {
		v.XTicks = append(v.XTicks, tickView{xPos(t.Value, spanS), t.Label})
	}

	var leftMax, rightMax float64
	values := make([][]float64, len(spec.series))
	for i, s := range spec.series {
		values[i] = make([]float64, len(samples))
		for j, sample := range samples {
			values[i][j] = finite(s.value(sample))
			if s.right {
				rightMax = max(rightMax, values[i][j])
			} else {
				leftMax = max(leftMax, values[i][j])
			}
		}
	}
	left := newValueAxis(max(leftMax, spec.minTop), spec.integer, spec.format)
	right := newValueAxis(max(rightMax, spec.minTop), spec.integer, spec.format)
	// Both axes share the grid lines: the one with more of them sets them,
	// so an all-zero pending series does not leave running pods two ticks.
	if len(right.Ticks) > len(left.Ticks) {
		left = alignedAxis(max(leftMax, spec.minTop), len(right.Ticks)-1, spec.integer, spec.format)
	} else {
		right = alignedAxis(max(rightMax, spec.minTop), len(left.Ticks)-1, spec.integer, spec.format)
	}
	for _, t := range left.Ticks {
		v.YTicks = append(v.YTicks, tickView{yPos(t.Value, left.Max), t.Label})
	}

	var desc []string
	for i, s := range spec.series {
		axis := left
		if s.right {
			axis = right
			v.RightClass = s.class
			for _, t := range right.Ticks {
				v.YTicksRight = append(v.YTicksRight, tickView{yPos(t.Value, right.Max), t.Label})
			}
		}
		pts := make([]point, len(samples))
		for j, sample := range samples {
			pts[j] = point{clampAt(sample.At).Seconds(), values[i][j]}
		}
		sv := seriesView{Name: s.name, Class: s.class}
		if coords := stepCoords(downsample(pts, maxPoints), spanS, axis.Max); len(coords) > 0 {
			sv.Points = joinPoints(coords)
			if s.area {
				base := yPos(0, axis.Max)
				sv.Area = joinPoints(append(coords, point{coords[len(coords)-1].X, base}, point{coords[0].X, base}))
			}
		}
		v.Series = append(v.Series, sv)
		desc = append(desc, describe(s.name, values[i], spec.format))
	}
	if v.Empty {
		v.Desc = spec.title + ": no samples."
	} else {
		v.Desc = fmt.Sprintf("%s over %s of simulated time. %s.", spec.title, compactDuration(span), strings.Join(desc, "; "))
	}
	return v
}

// stepCoords places pts (seconds, value) on the plot as steps, each value
// held until the next sample and the last one to the end of the run: the
// simulator samples a state, and a sloped line between two samples would show
// nodes that never existed.
func stepCoords(pts []point, spanS, top float64) []point {
	if len(pts) == 0 {
		return nil
	}
	out := make([]point, 0, 2*len(pts)+1)
	for i, p := range pts {
		if i > 0 {
			out = append(out, point{xPos(p.X, spanS), yPos(pts[i-1].Y, top)})
		}
		out = append(out, point{xPos(p.X, spanS), yPos(p.Y, top)})
	}
	if last := pts[len(pts)-1]; last.X < spanS {
		out = append(out, point{xPos(spanS, spanS), yPos(last.Y, top)})
	}
	return out
}

// joinPoints writes an SVG points attribute.
func joinPoints(pts []point) string {
	var b strings.Builder
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(fmtNum(p.X))
		b.WriteByte(',')
		b.WriteString(fmtNum(p.Y))
	}
	return b.String()
}

// describe gives a series' range in words, for screen readers and for the
// chart's tooltip when hovering its title.
func describe(name string, vals []float64, format func(float64) string) string {
	if len(vals) == 0 {
		return name + ": no samples"
	}
	lo, hi := vals[0], vals[0]
	for _, v := range vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	return fmt.Sprintf("%s from %s to %s, last %s", name, format(round2(lo)), format(round2(hi)), format(round2(vals[len(vals)-1])))
}

func xPos(seconds, spanS float64) float64 {
	if spanS <= 0 {
		return plotLeft
	}
	return plotLeft + min(max(seconds/spanS, 0), 1)*plotW
}

func yPos(v, top float64) float64 {
	return plotTop + plotH - min(max(v/top, 0), 1.05)*plotH
}

// fmtNum writes a coordinate to a tenth of a unit: finer than a pixel at any
// sensible width, and the same bytes for the same run.
func fmtNum(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// finite keeps a NaN or an infinity from a broken sample out of the SVG,
// where one would make the browser drop the whole line.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

func clampAt(d time.Duration) time.Duration { return max(d, 0) }

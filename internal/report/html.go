package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"time"
)

// The page's style and script are files of their own, so an editor checks
// them as CSS and JavaScript; they are inlined because the report must open
// from a file, offline, years later, with nothing fetched.
var (
	//go:embed page.html.tmpl
	pageSource string
	//go:embed report.css
	pageCSS string
	//go:embed report.js
	pageJS string
)

var pageTemplate = template.Must(template.New("page").Parse(pageSource))

// page is everything the template shows.
type page struct {
	Title    string
	Subtitle string
	Inputs   []string
	Stats    []stat
	Charts   []chartView
	Kinds    []kindView
	Summary  string
	Events   []eventRow
	// EventsOpen shows a short events table at once and folds a long one.
	EventsOpen bool
	Data       tooltipData
	CSS        template.CSS
	JS         template.JS
}

// tooltipData is what the hover script reads: the plot's geometry and a row
// of values per sample, at most maxPoints rows.
type tooltipData struct {
	Span  float64 `json:"span"`
	ViewW float64 `json:"viewW"`
	PlotX float64 `json:"plotX"`
	PlotW float64 `json:"plotW"`
	// Rows are [seconds, nodes, $/h, cpu %, memory %, pending, running].
	Rows [][7]float64 `json:"rows"`
}

// WriteHTML writes r as one self-contained HTML page: inline style, inline
// SVG charts and a little inline script for hover tooltips, nothing loaded
// from the network. The same Run always gives the same bytes, so reports can
// be compared and checked in.
func WriteHTML(w io.Writer, r Run) error {
	if err := pageTemplate.Execute(w, buildPage(r)); err != nil {
		return fmt.Errorf("writing report %q: %w", r.Title, err)
	}
	return nil
}

func buildPage(r Run) page {
	span := runSpan(r)
	kinds := eventKinds(r.Events)
	marks := eventMarks(r.Events, kinds, span)
	p := page{
		Title:      r.Title,
		Inputs:     r.Inputs,
		Summary:    r.Summary,
		Kinds:      kinds,
		Events:     eventRows(r.Events, kinds),
		EventsOpen: len(r.Events) <= 30,
		Stats:      runStats(r.Samples, span, r.Cost),
		Data:       tooltip(r.Samples, span),
		CSS:        template.CSS(pageCSS),
		JS:         template.JS(pageJS),
	}
	if p.Title == "" {
		p.Title = "nodewright simulation"
	}
	p.Subtitle = fmt.Sprintf("%s of simulated time · %s · %s",
		compactDuration(r.Duration), plural(len(r.Samples), "sample"), plural(len(r.Events), "event"))
	for _, spec := range charts {
		p.Charts = append(p.Charts, buildChart(spec, r.Samples, span, marks))
	}
	return p
}

// runSpan is the time the charts cover: the run's duration, stretched to
// show any sample or event past it, and never zero, so a run of one sample
// still draws a line.
func runSpan(r Run) time.Duration {
	span := r.Duration
	if n := len(r.Samples); n > 0 {
		span = max(span, r.Samples[n-1].At)
	}
	for _, e := range r.Events {
		span = max(span, e.At)
	}
	if span <= 0 {
		span = time.Minute
	}
	return span
}

func tooltip(samples []Sample, span time.Duration) tooltipData {
	d := tooltipData{Span: span.Seconds(), ViewW: chartW, PlotX: plotLeft, PlotW: plotW, Rows: [][7]float64{}}
	n := len(samples)
	stride := 1
	if n > maxPoints {
		stride = (n + maxPoints - 1) / maxPoints
	}
	for i := 0; i < n; i += stride {
		s := samples[i]
		d.Rows = append(d.Rows, [7]float64{
			clampAt(s.At).Seconds(), float64(s.Nodes), round2(finite(s.CostPerHour)),
			math.Round(finite(s.CPUUtilization)*1000) / 10, math.Round(finite(s.MemoryUtilization)*1000) / 10,
			float64(s.PendingPods), float64(s.RunningPods),
		})
	}
	return d
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

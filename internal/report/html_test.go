package report

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

func render(t *testing.T, r Run) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	return buf.String()
}

// edgeRuns are the runs a report must draw without breaking.
func edgeRuns() map[string]Run {
	allZero := Run{Title: "idle", Duration: time.Hour}
	for m := range 61 {
		allZero.Samples = append(allZero.Samples, Sample{At: time.Duration(m) * time.Minute})
	}
	broken := Run{Title: "broken numbers", Duration: time.Hour, Samples: []Sample{
		{At: -time.Minute, Nodes: 2, CostPerHour: nan(), CPUUtilization: 1.7},
		{At: time.Hour, Nodes: 3, CostPerHour: math.Inf(1), MemoryUtilization: nan()},
	}}
	return map[string]Run{
		"zero value":     {},
		"zero samples":   {Title: "nothing ran", Duration: time.Hour, Events: []Event{{At: time.Minute, Kind: "timeline", Text: "start"}}},
		"one sample":     {Title: "one", Samples: []Sample{{Nodes: 1, CostPerHour: 0.1, RunningPods: 3}}},
		"all zero":       allZero,
		"broken numbers": broken,
		"a day":          realisticRun(24*time.Hour, time.Minute),
		"a week at 10s":  realisticRun(7*24*time.Hour, 10*time.Second),
		"a short run":    realisticRun(90*time.Second, time.Second),
	}
}

var (
	urlPattern    = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	svgNamespace  = "http://www.w3.org/2000/svg"
	plotPattern   = regexp.MustCompile(`<svg class="plot"[^>]*role="img"[^>]*aria-labelledby="svgtitle-[a-z]+ svgdesc-[a-z]+"`)
	pointsPattern = regexp.MustCompile(`<polyline [^>]*points="([^"]*)"`)
)

func TestReportIsSelfContained(t *testing.T) {
	for name, r := range edgeRuns() {
		t.Run(name, func(t *testing.T) {
			html := render(t, r)
			if n := len(plotPattern.FindAllString(html, -1)); n != len(charts) {
				t.Errorf("%d labelled chart SVGs, want %d", n, len(charts))
			}
			for _, want := range []string{"<!DOCTYPE html>", "<pre class=\"summary\">", "</html>"} {
				if !strings.Contains(html, want) {
					t.Errorf("no %q", want)
				}
			}
			outside := strings.ReplaceAll(html, svgNamespace, "")
			if m := urlPattern.FindString(outside); m != "" {
				t.Errorf("refers to %q: the page must load nothing", m)
			}
			lower := strings.ToLower(outside)
			for _, bad := range []string{"http:", "https:", "<script src", "<link", "@import", "url(", "<img", "<iframe", "NaN", "Inf"} {
				if strings.Contains(lower, strings.ToLower(bad)) {
					t.Errorf("contains %q", bad)
				}
			}
			for _, m := range pointsPattern.FindAllStringSubmatch(html, -1) {
				if n := strings.Count(m[1], ","); n > 2*maxPoints+1 {
					t.Errorf("a line of %d points; downsampling should bound it by %d", n, 2*maxPoints+1)
				}
			}
		})
	}
}

func TestReportIsDeterministic(t *testing.T) {
	for name, r := range edgeRuns() {
		t.Run(name, func(t *testing.T) {
			if render(t, r) != render(t, r) {
				t.Error("the same run gave two different pages")
			}
		})
	}
}

func TestReportEscapesHostileText(t *testing.T) {
	const hostile = `</title></pre><script>alert(1)</script><img src=x onerror=alert(2)>"'&`
	r := realisticRun(time.Hour, time.Minute)
	r.Title = hostile
	r.Inputs = []string{hostile}
	r.Summary = hostile
	r.Events = append(r.Events,
		Event{At: 10 * time.Minute, Kind: hostile, Text: hostile},
		Event{At: 20 * time.Minute, Kind: "Drifted", Text: `</script><script>alert(3)</script>`})
	html := render(t, r)
	for _, bad := range []string{"<script>alert", "<img src=x", "</title></pre>", "onerror=alert(2)>"} {
		if strings.Contains(html, bad) {
			t.Errorf("hostile text came through unescaped: %q", bad)
		}
	}
	if n := strings.Count(html, "&lt;script&gt;alert(1)&lt;/script&gt;"); n < 4 {
		t.Errorf("hostile text shown escaped %d times, want it in title, heading, inputs, summary and events", n)
	}
	if n := strings.Count(html, "<script"); n != 2 {
		t.Errorf("%d <script> elements, want the page's own 2", n)
	}
}

func TestReportShowsEveryEventKindInTheLegend(t *testing.T) {
	r := realisticRun(24*time.Hour, time.Minute)
	r.Events = append(r.Events, Event{At: time.Hour, Kind: "Preempted", Text: "spot reclaimed"}, Event{At: 2 * time.Hour, Text: "no kind"})
	html := render(t, r)
	for _, kind := range []string{"timeline", "Empty", "Underutilized", "Drifted", "Expired", "Preempted", "event"} {
		if !strings.Contains(html, "</svg>"+kind+" <span class=\"count\">") {
			t.Errorf("legend lacks %q", kind)
		}
	}
}

func TestEventMarksShareAPixelColumn(t *testing.T) {
	var events []Event
	for i := range 10_000 {
		events = append(events, Event{At: time.Duration(i) * time.Second, Kind: "Underutilized", Text: "node"})
	}
	kinds := eventKinds(events)
	marks := eventMarks(events, kinds, 10_000*time.Second)
	if len(marks) > plotW+1 {
		t.Errorf("%d markers for a plot %d units wide", len(marks), plotW)
	}
	if !strings.Contains(marks[0].Label, "more") {
		t.Errorf("a crowded marker's label does not say more events share it: %q", marks[0].Label)
	}
}

func TestEdgeCasesDrawSomethingSensible(t *testing.T) {
	runs := edgeRuns()
	for _, tc := range []struct {
		run  string
		want []string
		not  []string
	}{
		{"zero value", []string{"<h1>nodewright simulation</h1>", "no samples", "(no summary)"}, []string{"<polyline"}},
		{"zero samples", []string{"no samples", "Nodes: no samples.", ">timeline <span"}, []string{"<polyline"}},
		// One sample still draws a line, held for the minute the axis shows.
		{"one sample", []string{`class="line s-nodes" points="64,12 900,12"`, ">1m<", "1 sample"}, []string{"no samples"}},
		{"all zero", []string{">0<", ">1<", ">100%<", "nodes from 0 to 0, last 0"}, nil},
		{"a short run", []string{">0s<", ">15s<", ">1m30s<"}, nil},
		{"a week at 10s", []string{">0d<", ">7d<"}, nil},
	} {
		t.Run(tc.run, func(t *testing.T) {
			html := render(t, runs[tc.run])
			for _, want := range tc.want {
				if !strings.Contains(html, want) {
					t.Errorf("no %q", want)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(html, not) {
					t.Errorf("has %q", not)
				}
			}
		})
	}
}

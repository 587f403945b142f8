package report

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// kindColors fixes the colour of the kinds the simulator writes, so the same
// reason looks the same in every report. Each reads on a white and on a
// near-black page.
var kindColors = map[string]string{
	"timeline":      "#64748b",
	"Empty":         "#0ea5e9",
	"Underutilized": "#a855f7",
	"Drifted":       "#f97316",
	"Expired":       "#e11d48",
}

// otherColors go, in order of first appearance, to kinds without a fixed
// colour; past the last, they repeat.
var otherColors = []string{"#14b8a6", "#ca8a04", "#65a30d", "#db2777", "#6366f1", "#0891b2"}

// kindView is one entry of the events' legend.
type kindView struct {
	Name, Color string
	Count       int
}

// eventRow is one line of the events table.
type eventRow struct {
	At, Kind, Color, Text string
}

// eventKinds returns the kinds of events in order of first appearance, with
// their colours and counts.
func eventKinds(events []Event) []kindView {
	var kinds []kindView
	index := map[string]int{}
	others := 0
	for _, e := range events {
		kind := kindName(e)
		if i, ok := index[kind]; ok {
			kinds[i].Count++
			continue
		}
		color, ok := kindColors[kind]
		if !ok {
			color = otherColors[others%len(otherColors)]
			others++
		}
		index[kind] = len(kinds)
		kinds = append(kinds, kindView{Name: kind, Color: color, Count: 1})
	}
	return kinds
}

func kindName(e Event) string {
	if e.Kind == "" {
		return "event"
	}
	return e.Kind
}

func colorOf(kinds []kindView, kind string) string {
	for _, k := range kinds {
		if k.Name == kind {
			return k.Color
		}
	}
	return otherColors[0]
}

// eventMarks groups events of one kind on the same pixel column into one
// marker whose tooltip lists them (the first few, then a count).
func eventMarks(events []Event, kinds []kindView, span time.Duration) []markView {
	const listed = 5
	type key struct {
		col  int
		kind string
	}
	var marks []markView
	var texts [][]string
	var counts []int
	index := map[key]int{}
	spanS := span.Seconds()
	for _, e := range events {
		x := xPos(clampAt(e.At).Seconds(), spanS)
		k := key{int(math.Round(x)), kindName(e)}
		line := compactDuration(clampAt(e.At)) + " " + k.kind
		if e.Text != "" {
			line += ": " + e.Text
		}
		i, ok := index[k]
		if !ok {
			i = len(marks)
			index[k] = i
			marks = append(marks, markView{X: math.Round(x*10) / 10, Color: colorOf(kinds, k.kind)})
			texts = append(texts, nil)
			counts = append(counts, 0)
		}
		counts[i]++
		if len(texts[i]) < listed {
			texts[i] = append(texts[i], line)
		}
	}
	for i := range marks {
		label := strings.Join(texts[i], "\n")
		if more := counts[i] - len(texts[i]); more > 0 {
			label += "\n… and " + strconv.Itoa(more) + " more"
		}
		marks[i].Label = label
	}
	return marks
}

// eventRows lists every event for the table under the charts.
func eventRows(events []Event, kinds []kindView) []eventRow {
	rows := make([]eventRow, len(events))
	for i, e := range events {
		kind := kindName(e)
		rows[i] = eventRow{At: compactDuration(clampAt(e.At)), Kind: kind, Color: colorOf(kinds, kind), Text: e.Text}
	}
	return rows
}

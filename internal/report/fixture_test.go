package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// realisticRun is a day of a cluster under a daily load curve, sampled every
// step: pods that rise in the morning and fall at night, nodes that follow a
// few minutes late (pending pods meanwhile), consolidation at night and a
// drift rollout in the afternoon. It is deterministic.
func realisticRun(length, step time.Duration) Run {
	r := Run{
		Title:    "nodewright simulate: examples/ci-runners",
		Inputs:   []string{"examples/ci-runners/nodepools.yaml", "examples/ci-runners/workloads.yaml", "examples/ci-runners/timeline.yaml"},
		Duration: length,
	}
	nodes := 4
	for at := time.Duration(0); at <= length; at += step {
		h := at.Hours()
		demand := 120 + 100*math.Sin((h-9)/24*2*math.Pi) + 15*math.Sin(h*7)
		want := int(math.Ceil(max(demand, 10) / 11))
		// Nodes launch a few at a time and drain slowly, as a real cluster does.
		if want > nodes && int(at/step)%4 == 0 {
			nodes++
		} else if want < nodes && int(at/step)%5 == 0 {
			nodes--
		}
		capacity := nodes * 11
		running := min(int(demand), capacity)
		pending := max(int(demand)-capacity, 0)
		r.Samples = append(r.Samples, Sample{
			At:                at,
			Nodes:             nodes,
			CostPerHour:       float64(nodes) * 0.192,
			CPUUtilization:    float64(running) / float64(capacity) * 0.9,
			MemoryUtilization: float64(running) / float64(capacity) * 0.62,
			PendingPods:       pending,
			RunningPods:       running,
		})
	}
	for h := time.Duration(0); h < length; h += 6 * time.Hour {
		r.Events = append(r.Events, Event{At: h, Kind: "timeline", Text: fmt.Sprintf("scale ci-runners to %d replicas", 40+int(h.Hours())*3)})
	}
	for m := 60; m < int(length.Minutes()); m += 47 {
		kind := "Underutilized"
		switch {
		case m%3 == 0:
			kind = "Empty"
		case m > 840 && m < 960:
			kind = "Drifted"
		case m%11 == 0:
			kind = "Expired"
		}
		r.Events = append(r.Events, Event{At: time.Duration(m) * time.Minute, Kind: kind, Text: fmt.Sprintf("node ci-%03d replaced by 1 × m5.large", m%997)})
	}
	r.Events = append(r.Events, Event{At: length * 13 / 24, Kind: "timeline", Text: `deploy <script>alert("x")</script> & "quotes"`})
	slices.SortStableFunc(r.Events, func(a, b Event) int { return cmp.Compare(a.At, b.At) })
	r.Summary = "simulated 24h0m0s\n  nodes: peak 23, final 5\n  cost: $61.20 over the run\n  disruptions: 30 (Underutilized 18, Empty 9, Drifted 3)"
	return r
}

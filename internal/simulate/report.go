package simulate

import (
	"github.com/nodewright/nodewright/internal/report"
)

// Report is the run as package report draws it.
func (r *Result) Report(title string) report.Run {
	run := report.Run{Title: title, Inputs: r.Inputs, Duration: r.Duration.Duration, Summary: r.Text(), Cost: r.Cost}
	for _, s := range r.Samples {
		run.Samples = append(run.Samples, report.Sample{At: s.At.Duration, Nodes: s.Nodes, CostPerHour: s.CostPerHour,
			CPUUtilization: s.CPUUtilization, MemoryUtilization: s.MemoryUtilization, PendingPods: s.PendingPods, RunningPods: s.RunningPods})
	}
	for _, ev := range r.Events {
		run.Events = append(run.Events, report.Event{At: ev.At.Duration, Kind: ev.Kind, Text: ev.Text})
	}
	return run
}

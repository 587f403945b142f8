package report

import (
	"strconv"
	"time"
)

// stat is one headline figure above the charts.
type stat struct {
	Label, Value string
}

// runStats are the figures a reader compares between two runs first. They
// come from the samples, so they agree with the charts whatever the summary
// says.
func runStats(samples []Sample, span time.Duration, exactCost float64) []stat {
	if len(samples) == 0 {
		return nil
	}
	var peakNodes, peakPending int
	var peakCost, dollars, cpuTime, covered float64
	for i, s := range samples {
		peakNodes = max(peakNodes, s.Nodes)
		peakPending = max(peakPending, s.PendingPods)
		peakCost = max(peakCost, finite(s.CostPerHour))
		// Each sample's state holds until the next one, the last to the end.
		end := span
		if i+1 < len(samples) {
			end = samples[i+1].At
		}
		hours := max(end-clampAt(s.At), 0).Hours()
		dollars += finite(s.CostPerHour) * hours
		cpuTime += finite(s.CPUUtilization) * hours
		covered += hours
	}
	if exactCost > 0 {
		// The samples see a node only at sample times; the simulator's own
		// count is the one the summary quotes, and the two must agree.
		dollars = exactCost
	}
	meanCPU := 0.0
	if covered > 0 {
		meanCPU = cpuTime / covered
	}
	return []stat{
		{"peak nodes", strconv.Itoa(peakNodes)},
		{"peak cost", "$" + strconv.FormatFloat(peakCost, 'f', 2, 64) + "/h"},
		{"cost of the run", "$" + strconv.FormatFloat(dollars, 'f', 2, 64)},
		{"mean CPU utilization", strconv.FormatFloat(100*meanCPU, 'f', 1, 64) + "%"},
		{"peak pending pods", strconv.Itoa(peakPending)},
	}
}

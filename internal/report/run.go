// Package report renders a simulation run as a self-contained HTML page:
// charts of nodes, cost, utilization and pending pods over time, with the
// run's summary, and nothing fetched from the network when it opens.
package report

import "time"

// Run is what a report shows. The simulator fills it; the report only reads it.
type Run struct {
	// Title heads the page ("nodewright simulate: examples/ci-runners").
	Title string
	// Inputs names the manifest files and the timeline the run read.
	Inputs []string
	// Duration is the simulated time the run covered.
	Duration time.Duration
	// Samples are the cluster's state over simulated time, in order.
	Samples []Sample
	// Summary is the run's text summary, shown as it is.
	Summary string
	// Events are notable moments (timeline steps, disruptions), in order.
	Events []Event
	// Cost is what the run's nodes cost in all, in dollars, counted by the
	// simulator to the second; 0 lets the page estimate it from Samples.
	Cost float64
}

// Sample is the cluster at one moment of simulated time.
type Sample struct {
	At          time.Duration // since the start of the run
	Nodes       int
	CostPerHour float64 // dollars per hour of the nodes running
	// CPUUtilization and MemoryUtilization are requests over allocatable,
	// 0..1, across all nodes.
	CPUUtilization    float64
	MemoryUtilization float64
	PendingPods       int
	RunningPods       int
}

// Event is a moment worth marking on the charts.
type Event struct {
	At   time.Duration
	Kind string // "timeline", "Empty", "Underutilized", "Drifted", "Expired", ...
	Text string
}

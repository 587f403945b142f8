package simulate

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/nodewright/nodewright/internal/manifests"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// Schema names the version of Result's JSON form. Fields are only ever
// added within a version; a change that breaks readers takes a new one.
const Schema = "nodewright.dev/simulate/v1"

// Result is what a run did, in the stable form `simulate -o json` prints
// (docs/simulate.md describes each field).
type Result struct {
	Schema string   `json:"schema"`
	Inputs []string `json:"inputs,omitempty"`
	// Prices says where the prices of a cloud's built-in catalog come from
	// and how spot prices are modelled, when the run used one.
	Prices string `json:"prices,omitempty"`
	// Region is the AWS region EC2NodeClasses launched from and why, when
	// nodewright chose it from their subnets' zones rather than the
	// default or --region: "us-west-2 (from EC2NodeClass default's
	// subnets)".
	Region   string   `json:"region,omitempty"`
	Start    string   `json:"start"`
	Duration Duration `json:"duration"`
	// Nodes are the nodes at the end, by instance type, zone and capacity
	// type; in-flight claims count.
	Nodes       []NodeGroup `json:"nodes"`
	CostPerHour float64     `json:"costPerHour"`
	// Cost is what the run's nodes cost, in dollars, from launch (or the
	// start) to removal (or the end).
	Cost            float64 `json:"cost"`
	PeakNodes       int     `json:"peakNodes"`
	PeakCostPerHour float64 `json:"peakCostPerHour"`
	Pods            Pods    `json:"pods"`
	// Pending groups the pods still pending at the end by the solver's
	// reason.
	Pending []PendingGroup `json:"pending"`
	// Launched counts NodeClaims launched, by why: provisioning or a
	// disruption's replacement.
	Launched map[string]int `json:"launched"`
	// Disruptions counts nodes disrupted, by reason.
	Disruptions map[string]int `json:"disruptions"`
	Events      []Happening    `json:"events"`
	Samples     []Sample       `json:"samples"`
	// Warnings are parts of the input the run could not model.
	Warnings []string `json:"warnings,omitempty"`
	// Skipped are the objects and files of the input that were not used,
	// each with why, so that a script can tell its input was not all read.
	Skipped []Skipped `json:"skipped,omitempty"`
}

// Inputs lists what a run read, for Result.Inputs: the cluster read
// (cluster, "" for none), the manifest files in the order read, the
// timeline file and the catalog file ("" for none). The CLI and the
// examples' test both build the list here, so that the examples' expected
// outputs hold the line the CLI prints.
func Inputs(cluster string, set *manifests.Set, timeline, catalog string) []string {
	var out []string
	if cluster != "" {
		out = append(out, cluster)
	}
	out = append(out, set.Files...)
	for _, f := range []string{timeline, catalog} {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Skipped is one object, or part of a file, the run left out.
type Skipped struct {
	File      string `json:"file"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Message   string `json:"message"`
}

// SkippedFrom lists the loader's problems in the result's form.
func SkippedFrom(problems []manifests.Problem) []Skipped {
	out := make([]Skipped, 0, len(problems))
	for _, p := range problems {
		out = append(out, Skipped{File: p.File, Kind: p.Kind, Namespace: p.Namespace, Name: p.Name, Message: p.Message})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// NodeGroup counts nodes of one offering.
type NodeGroup struct {
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Count        int     `json:"count"`
	PricePerHour float64 `json:"pricePerHour"` // of one node
}

// Pods counts pods at the end, and over the run.
type Pods struct {
	// Running and Pending leave out DaemonSet pods, counted apart.
	Running   int `json:"running"`
	Pending   int `json:"pending"`
	DaemonSet int `json:"daemonSet"`
	// Bindings counts every time a pod was bound, over the run.
	Bindings int `json:"bindings"`
	// Evicted counts pods drained off disrupted nodes.
	Evicted int `json:"evicted"`
	// Completed counts pods that ran their duration and ended.
	Completed int `json:"completed"`
}

// PendingGroup is pending pods that share a reason.
type PendingGroup struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	// Examples name up to three of the pods, namespace/name.
	Examples []string `json:"examples"`
}

// Happening is a notable moment: a timeline step or a disruption.
type Happening struct {
	At   Duration `json:"at"`
	Kind string   `json:"kind"`
	Text string   `json:"text"`
}

// Sample is the cluster at one moment.
type Sample struct {
	At                Duration `json:"at"`
	Nodes             int      `json:"nodes"`
	CostPerHour       float64  `json:"costPerHour"`
	CPUUtilization    float64  `json:"cpuUtilization"`
	MemoryUtilization float64  `json:"memoryUtilization"`
	PendingPods       int      `json:"pendingPods"`
	RunningPods       int      `json:"runningPods"`
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
func round4(f float64) float64 { return math.Round(f*10000) / 10000 }

// result summarizes the run at its end.
func (e *Engine) result() *Result {
	r := &Result{Schema: Schema, Start: e.start.Format("2006-01-02T15:04:05Z07:00"), Duration: e.tl.Duration,
		Launched: e.rec.launches, Disruptions: e.rec.disruptions, Events: e.rec.events, Samples: e.rec.samples,
		Warnings: e.rec.warnings, PeakNodes: e.rec.peakNodes, PeakCostPerHour: e.rec.peakCost, Prices: e.cloud.Prices(),
		Region: e.cloud.AWSRegion()}
	cost := e.rec.cost
	groups := map[[3]string]*NodeGroup{}
	for _, nc := range e.claims {
		st := e.claimState[nc.Name]
		if st == nil || st.offering.it == nil {
			continue
		}
		cost += st.offering.price * e.billedHours(st)
		r.CostPerHour += st.offering.price
		k := [3]string{st.offering.it.Name, st.offering.zone, st.offering.capacityType}
		if groups[k] == nil {
			groups[k] = &NodeGroup{InstanceType: k[0], Zone: k[1], CapacityType: k[2], PricePerHour: st.offering.price}
		}
		groups[k].Count++
	}
	for _, g := range groups {
		r.Nodes = append(r.Nodes, *g)
	}
	sort.Slice(r.Nodes, func(i, j int) bool {
		a, b := r.Nodes[i], r.Nodes[j]
		return a.InstanceType+"/"+a.Zone+"/"+a.CapacityType < b.InstanceType+"/"+b.Zone+"/"+b.CapacityType
	})
	r.Cost, r.CostPerHour = math.Round(cost*100)/100, round4(r.CostPerHour)
	r.Pods = Pods{Bindings: e.rec.bound, Evicted: e.rec.evicted, Completed: e.rec.jobsDone}
	for _, p := range e.pods {
		switch {
		case p.DeletionTimestamp != nil:
		case snapshot.IsDaemonSetPod(p):
			r.Pods.DaemonSet++
		case p.Spec.NodeName != "":
			r.Pods.Running++
		default:
			r.Pods.Pending++
		}
	}
	r.Pending = pendingGroups(e)
	if r.Nodes == nil {
		r.Nodes = []NodeGroup{}
	}
	if r.Events == nil {
		r.Events = []Happening{}
	}
	return r
}

// pendingGroups groups the last solve's unschedulable pods by reason,
// largest group first; pods pending for want of a solve yet (their nodes
// are on their way) are grouped as such.
func pendingGroups(e *Engine) []PendingGroup {
	reasons := map[string]string{}
	for _, u := range e.unschedulable {
		reasons[string(u.Pod.UID)] = withPoolErrors(u.Reason, e.poolErrs)
	}
	byReason := map[string]*PendingGroup{}
	for _, p := range e.pods {
		if p.DeletionTimestamp != nil || p.Spec.NodeName != "" {
			continue
		}
		why, ok := reasons[string(p.UID)]
		if !ok {
			why = "waiting for a node being launched, or for the next provisioning loop"
		}
		g := byReason[why]
		if g == nil {
			g = &PendingGroup{Reason: why}
			byReason[why] = g
		}
		g.Count++
		if len(g.Examples) < 3 {
			g.Examples = append(g.Examples, p.Namespace+"/"+p.Name)
		}
	}
	out := []PendingGroup{}
	for _, g := range byReason {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

// Text writes the human summary.
func (r *Result) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "simulated %s from %s\n", r.Duration.Duration, r.Start)
	if len(r.Inputs) > 0 {
		fmt.Fprintf(&b, "inputs: %s\n", strings.Join(r.Inputs, ", "))
	}
	if r.Region != "" {
		fmt.Fprintf(&b, "region: %s\n", r.Region)
	}
	if r.Prices != "" {
		fmt.Fprintf(&b, "prices: %s\n", r.Prices)
	}
	total := 0
	for _, g := range r.Nodes {
		total += g.Count
	}
	fmt.Fprintf(&b, "\nnodes at the end: %d, $%.4f/h (peak %d nodes, $%.4f/h); cost over the run $%.2f\n",
		total, r.CostPerHour, r.PeakNodes, r.PeakCostPerHour, r.Cost)
	for _, g := range r.Nodes {
		fmt.Fprintf(&b, "  %3d x %-14s %-8s %-10s $%.4f/h each\n", g.Count, g.InstanceType, g.Zone, g.CapacityType, g.PricePerHour)
	}
	fmt.Fprintf(&b, "\npods at the end: %d running, %d pending", r.Pods.Running, r.Pods.Pending)
	if r.Pods.DaemonSet > 0 {
		fmt.Fprintf(&b, ", %d DaemonSet pods", r.Pods.DaemonSet)
	}
	fmt.Fprintf(&b, "; over the run %d bindings, %d evicted, %d completed\n", r.Pods.Bindings, r.Pods.Evicted, r.Pods.Completed)
	for _, g := range r.Pending {
		fmt.Fprintf(&b, "  %d pending (%s): %s\n", g.Count, strings.Join(g.Examples, ", "), g.Reason)
	}
	fmt.Fprintf(&b, "\nNodeClaims launched: %s\n", counts(r.Launched))
	fmt.Fprintf(&b, "nodes disrupted: %s\n", counts(r.Disruptions))
	if len(r.Events) > 0 {
		const show = 25
		fmt.Fprintf(&b, "\nevents:\n")
		for i, ev := range r.Events {
			if i == show {
				fmt.Fprintf(&b, "  ... and %d more (-o json lists them all)\n", len(r.Events)-show)
				break
			}
			fmt.Fprintf(&b, "  %9s  %-13s %s\n", ev.At.Duration, ev.Kind, ev.Text)
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintf(&b, "\nwarnings:\n")
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "  %s\n", w)
		}
	}
	return b.String()
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

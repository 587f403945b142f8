package simulate

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// recorder collects what a run did, as it goes.
type recorder struct {
	samples     []Sample
	events      []Happening
	warnings    []string
	launches    map[string]int // by why
	disruptions map[string]int // nodes, by reason
	cost        float64        // dollars of claims already gone
	bound       int
	evicted     int
	jobsDone    int
	peakNodes   int
	peakCost    float64

	solves, decides       int
	solveTime, decideTime time.Duration
}

func newRecorder() *recorder {
	return &recorder{launches: map[string]int{}, disruptions: map[string]int{}}
}

func (r *recorder) warn(msg string) { r.warnings = append(r.warnings, msg) }

func (r *recorder) event(at time.Duration, kind, text string) {
	r.events = append(r.events, Happening{At: Duration{at}, Kind: kind, Text: text})
}

func (r *recorder) launched(why string) { r.launches[why]++ }

func (r *recorder) disrupted(e *Engine, nc *karpv1.NodeClaim, reason, msg string) {
	r.disruptions[reason]++
	r.event(e.now.Sub(e.start), reason, fmt.Sprintf("%s (%s): %s", nc.Name, nc.Labels[corev1.LabelInstanceTypeStable], msg))
}

func (r *recorder) removed(e *Engine, nc *karpv1.NodeClaim) {
	if st := e.claimState[nc.Name]; st != nil {
		r.cost += st.offering.price * e.billedHours(st)
	}
}

// billedHours is how long a claim has cost money within the run: from its
// launch, or from the start for a claim the input brought (it ran, and
// cost, before the run too), to now. runStart keeps the input's claims
// from being launched after the start, so it is never negative.
func (e *Engine) billedHours(st *claimState) float64 {
	return e.now.Sub(later(st.launched, e.start)).Hours()
}

// sample records the cluster now.
func (r *recorder) sample(e *Engine) {
	s := Sample{At: Duration{e.now.Sub(e.start)}, Nodes: len(e.nodes)}
	for _, nc := range e.claims {
		if st := e.claimState[nc.Name]; st != nil {
			s.CostPerHour += st.offering.price
		}
	}
	var cpu, mem, cpuAlloc, memAlloc int64
	for _, n := range e.nodes {
		cpuAlloc += n.Status.Allocatable.Cpu().MilliValue()
		memAlloc += n.Status.Allocatable.Memory().Value()
	}
	for _, p := range e.pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName == "" {
			if !snapshot.IsDaemonSetPod(p) {
				s.PendingPods++
			}
			continue
		}
		s.RunningPods++
		c, m := e.requests(p)
		cpu += c
		mem += m
	}
	if cpuAlloc > 0 {
		s.CPUUtilization = round3(float64(cpu) / float64(cpuAlloc))
	}
	if memAlloc > 0 {
		s.MemoryUtilization = round3(float64(mem) / float64(memAlloc))
	}
	s.CostPerHour = round4(s.CostPerHour)
	r.samples = append(r.samples, s)
	r.peakNodes = max(r.peakNodes, s.Nodes)
	r.peakCost = max(r.peakCost, s.CostPerHour)
}

// requests are a pod's CPU (millicores) and memory (bytes) requests,
// cached: they never change during a run.
func (e *Engine) requests(p *corev1.Pod) (int64, int64) {
	st := e.podState[p.UID]
	if st != nil && st.cached {
		return st.cpu, st.mem
	}
	var cpu, mem int64
	for _, c := range p.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
		mem += c.Resources.Requests.Memory().Value()
	}
	if st != nil {
		st.cpu, st.mem, st.cached = cpu, mem, true
	}
	return cpu, mem
}

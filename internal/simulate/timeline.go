package simulate

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/internal/manifests"
)

// Timeline is what happens during a run, read from a small YAML file
// (docs/simulate.md):
//
//	duration: 24h
//	events:
//	- at: 1h
//	  scale: {kind: Deployment, namespace: default, name: web, replicas: 40}
type Timeline struct {
	// Start is the wall-clock instant the run begins at (RFC 3339, UTC);
	// budgets with schedules and weekday windows follow it. Zero means
	// DefaultStart, a Monday midnight, or, when the input records a later
	// instant (a dump's creationTimestamps), that instant rounded up to
	// the minute; New refuses a start before the input (runStart).
	Start time.Time `json:"start,omitempty"`
	// Duration is how much virtual time the run covers.
	Duration Duration `json:"duration"`
	// Step is the virtual clock's tick, 1s to 10s; default 1s, which the
	// provisioner's one-second batch window needs to be exact.
	Step Duration `json:"step,omitempty"`
	// Sample is how often the cluster is sampled for the report; default 1m.
	Sample Duration `json:"sample,omitempty"`
	// LaunchDelay is how long a launched NodeClaim takes to register its
	// node, unless its KWOKNodeClass sets faults.registrationDelay;
	// default 30s.
	LaunchDelay Duration `json:"launchDelay,omitempty"`
	// StartupTaintDelay is how long after registration a node's startup
	// taints are removed (by the agent that owns them), unless the
	// KWOKNodeClass's faults.agentTaints says otherwise; default 10s.
	StartupTaintDelay Duration `json:"startupTaintDelay,omitempty"`
	Events            []Event  `json:"events,omitempty"`

	// Name is the file the timeline was read from, for messages.
	Name string `json:"-"`
}

// DefaultStart is Monday 5 January 2026, 00:00 UTC: the start of a run
// that gives none, unless its input records a later instant.
var DefaultStart = time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)

// Event is one change, once (At) or repeated (Every, from At, until Until).
// Exactly one of the actions is set.
type Event struct {
	At    *Duration `json:"at,omitempty"`
	Every *Duration `json:"every,omitempty"`
	Until *Duration `json:"until,omitempty"`

	Scale    *ScaleAction    `json:"scale,omitempty"`
	Jobs     *JobsAction     `json:"jobs,omitempty"`
	NodePool *NodePoolAction `json:"nodePool,omitempty"`
	Image    *ImageAction    `json:"image,omitempty"`
}

// ScaleAction sets a workload's replicas: new pods are pending, and the
// newest pods go first when it shrinks. Delta instead adds (or, negative,
// removes) that many, for churn that repeats.
type ScaleAction struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Replicas  *int32 `json:"replicas,omitempty"`
	Delta     *int32 `json:"delta,omitempty"`
}

// JobsAction starts Count pods of a Job that each run for Duration.
type JobsAction struct {
	Namespace    string            `json:"namespace,omitempty"`
	Name         string            `json:"name"`
	Count        int32             `json:"count"`
	Duration     Duration          `json:"duration"`
	CPU          string            `json:"cpu,omitempty"`
	Memory       string            `json:"memory,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// NodePoolAction applies a JSON merge patch (RFC 7386) to a NodePool, as
// kubectl patch --type merge does; a template change drifts its nodes.
type NodePoolAction struct {
	Name  string         `json:"name"`
	Patch map[string]any `json:"patch"`
}

// ImageAction gives a KWOKNodeClass a new machine image: nodes running the
// old one drift.
type ImageAction struct {
	NodeClass string `json:"nodeClass"`
	Image     string `json:"image"`
}

// Duration is a Go duration ("90s", "1h30m") that also accepts days ("2d").
type Duration struct{ time.Duration }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"90s\", \"6h\" or \"2d\"")
	}
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as Go formats it.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Duration.String()) }

func parseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(days, "%d", &n); err == nil && fmt.Sprint(n) == days {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: use a Go duration such as \"90s\", \"6h\" or \"2d\"", s)
	}
	return v, nil
}

// ReadTimeline reads and checks a timeline file. Errors name the file, the
// event and the field, with the fix.
func ReadTimeline(path string) (*Timeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading timeline: %w", err)
	}
	return ParseTimeline(path, data)
}

// ParseTimeline reads a timeline from data; name is used in errors.
func ParseTimeline(name string, data []byte) (*Timeline, error) {
	t := &Timeline{}
	if err := checkTimelineFields(data); err != nil {
		return nil, fmt.Errorf("%s: %w; see docs/simulate.md for the timeline format", name, err)
	}
	if err := yaml.UnmarshalStrict(data, t); err != nil {
		return nil, fmt.Errorf("%s: %v; see docs/simulate.md for the timeline format", name, err)
	}
	t.defaults()
	t.Name = name
	if err := t.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

// DefaultTimeline is the timeline of a run without a timeline file: an
// hour, nothing happening but what the manifests start.
func DefaultTimeline() *Timeline {
	t := &Timeline{Duration: Duration{time.Hour}, Name: "the default timeline"}
	t.defaults()
	return t
}

func (t *Timeline) defaults() {
	// A zero start is left for New to choose from the input (runStart).
	t.Start = t.Start.UTC()
	if t.Step.Duration == 0 {
		t.Step.Duration = time.Second
	}
	if t.Sample.Duration == 0 {
		t.Sample.Duration = time.Minute
	}
	if t.LaunchDelay.Duration == 0 {
		t.LaunchDelay.Duration = 30 * time.Second
	}
	if t.StartupTaintDelay.Duration == 0 {
		t.StartupTaintDelay.Duration = 10 * time.Second
	}
	for i := range t.Events {
		e := &t.Events[i]
		if e.Scale != nil && e.Scale.Namespace == "" {
			e.Scale.Namespace = "default"
		}
		if e.Jobs != nil && e.Jobs.Namespace == "" {
			e.Jobs.Namespace = "default"
		}
	}
}

func (t *Timeline) validate() error {
	switch {
	case t.Duration.Duration <= 0:
		return fmt.Errorf("duration: must be positive, such as \"24h\"")
	case t.Duration.Duration > 31*24*time.Hour:
		return fmt.Errorf("duration: %s is over 31 days; simulate a month at most", t.Duration)
	case t.Step.Duration < time.Second || t.Step.Duration > 10*time.Second:
		return fmt.Errorf("step: %s must be between 1s and 10s", t.Step)
	case t.Sample.Duration < t.Step.Duration:
		return fmt.Errorf("sample: %s must be at least the step (%s)", t.Sample, t.Step)
	case t.LaunchDelay.Duration < 0 || t.StartupTaintDelay.Duration < 0:
		return fmt.Errorf("launchDelay and startupTaintDelay must not be negative")
	}
	for i, e := range t.Events {
		if err := e.validate(t); err != nil {
			return fmt.Errorf("%s: %w", e.label(i), err)
		}
	}
	return nil
}

func (e Event) validate(t *Timeline) error {
	n := 0
	for _, set := range []bool{e.Scale != nil, e.Jobs != nil, e.NodePool != nil, e.Image != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("has %d actions; give exactly one of scale, jobs, nodePool or image", n)
	}
	if e.At == nil && e.Every == nil {
		return fmt.Errorf("has neither at nor every; say when it happens, such as at: 1h")
	}
	if e.At != nil && (e.At.Duration < 0 || e.At.Duration > t.Duration.Duration) {
		return fmt.Errorf("at: %s is outside the run (0 to %s)", e.At.Duration, t.Duration)
	}
	if e.Every != nil && e.Every.Duration < t.Step.Duration {
		return fmt.Errorf("every: %s is shorter than the step (%s)", e.Every.Duration, t.Step)
	}
	if e.Until != nil && e.Every == nil {
		return fmt.Errorf("until: only means something with every")
	}
	switch {
	case e.Scale != nil:
		s := e.Scale
		if s.Kind != "Deployment" && s.Kind != "StatefulSet" && s.Kind != "ReplicaSet" {
			return fmt.Errorf("scale.kind: %q must be Deployment, StatefulSet or ReplicaSet", s.Kind)
		}
		if s.Name == "" {
			return fmt.Errorf("scale.name: is empty; name the %s to scale", s.Kind)
		}
		if (s.Replicas == nil) == (s.Delta == nil) {
			return fmt.Errorf("scale: give exactly one of replicas (a count) or delta (a change)")
		}
		if s.Replicas != nil && *s.Replicas < 0 {
			return fmt.Errorf("scale.replicas: %d must be 0 or more", *s.Replicas)
		}
	case e.Jobs != nil:
		j := e.Jobs
		if j.Name == "" {
			return fmt.Errorf("jobs.name: is empty; name the job")
		}
		if j.Count <= 0 {
			return fmt.Errorf("jobs.count: %d must be positive", j.Count)
		}
		if j.Duration.Duration <= 0 {
			return fmt.Errorf("jobs.duration: must be positive, such as \"6m\"")
		}
		for field, v := range map[string]string{"cpu": j.CPU, "memory": j.Memory} {
			if v == "" {
				continue
			}
			if _, err := resource.ParseQuantity(v); err != nil {
				return fmt.Errorf("jobs.%s: %q is not a quantity such as \"500m\" or \"4Gi\"", field, v)
			}
		}
	case e.NodePool != nil:
		if e.NodePool.Name == "" || len(e.NodePool.Patch) == 0 {
			return fmt.Errorf("nodePool: give the NodePool's name and a non-empty patch")
		}
	case e.Image != nil:
		if e.Image.NodeClass == "" || e.Image.Image == "" {
			return fmt.Errorf("image: give nodeClass (a KWOKNodeClass name) and image")
		}
	}
	return nil
}

// Check reports events that refer to objects the manifests lack.
func (t *Timeline) Check(set *manifests.Set) error {
	name := t.label()
	for i, e := range t.Events {
		switch {
		case e.Scale != nil:
			if _, ok := findWorkload(set, e.Scale.Kind, e.Scale.Namespace, e.Scale.Name); !ok {
				return fmt.Errorf("%s: %s: scale: %s %s/%s is not in the manifests; add it or fix the name",
					name, e.label(i), e.Scale.Kind, e.Scale.Namespace, e.Scale.Name)
			}
		case e.NodePool != nil:
			if set.NodePool(e.NodePool.Name) == nil {
				return fmt.Errorf("%s: %s: nodePool: NodePool %s is not in the manifests; add it or fix the name", name, e.label(i), e.NodePool.Name)
			}
		case e.Image != nil:
			if set.NodeClass(e.Image.NodeClass) == nil {
				return fmt.Errorf("%s: %s: image: KWOKNodeClass %s is not in the manifests; add it or fix the name", name, e.label(i), e.Image.NodeClass)
			}
		}
	}
	return nil
}

// label names the timeline in messages.
func (t *Timeline) label() string {
	if t.Name == "" {
		return "timeline"
	}
	return t.Name
}

func findWorkload(set *manifests.Set, kind, namespace, name string) (manifests.Workload, bool) {
	for _, w := range set.Workloads() {
		if w.Kind == kind && w.Namespace == namespace && w.Name == name {
			return w, true
		}
	}
	return manifests.Workload{}, false
}

// occurrences lists the instants, from the start, at which e happens
// within the run.
func (e Event) occurrences(run time.Duration) []time.Duration {
	if e.Every == nil {
		return []time.Duration{e.At.Duration}
	}
	from, until := e.Every.Duration, run
	if e.At != nil {
		from = e.At.Duration
	}
	if e.Until != nil && e.Until.Duration < until {
		until = e.Until.Duration
	}
	var out []time.Duration
	for at := from; at <= until; at += e.Every.Duration {
		out = append(out, at)
	}
	return out
}

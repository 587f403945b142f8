package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/manifests"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/simulate"
)

// The fidelity of `nodewright simulate` (issue 21): a scenario the e2e
// tests play on the local cluster is simulated from the same objects and
// timeline, and the node counts of its NodePool are compared minute by
// minute. They may differ by one node or 10%, whichever is larger, give or
// take fidelityShift: the live run's loops wait on a loaded machine and its
// binding order is its own, the simulation's are neither. docs/simulate.md
// keeps the figures.

// fidelitySample is a NodePool's node count at a moment of a run.
type fidelitySample struct {
	at    time.Duration
	nodes int
}

// sampleNodes counts pool's nodes now and every 30s until the returned
// function is first called; it returns the samples.
func sampleNodes(pool string) func() []fidelitySample {
	var (
		mu      sync.Mutex
		samples []fidelitySample
	)
	stop, done := make(chan struct{}), make(chan struct{})
	begin := time.Now()
	go func() {
		defer close(done)
		for next := begin; ; next = next.Add(30 * time.Second) {
			select {
			case <-stop:
				return
			case <-time.After(time.Until(next)):
			}
			if nodes, err := nodesOf(pool); err == nil {
				mu.Lock()
				samples = append(samples, fidelitySample{at: time.Since(begin).Round(time.Second), nodes: len(nodes)})
				mu.Unlock()
			}
		}
	}()
	var once sync.Once
	return func() []fidelitySample {
		once.Do(func() { close(stop) })
		<-done
		mu.Lock()
		defer mu.Unlock()
		return samples
	}
}

// liveObject reads obj, which names it, back from the cluster: the object
// as the API server defaulted it, what the controller sees.
func liveObject[T client.Object](t *testing.T, obj T) T {
	t.Helper()
	if err := kc.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("reading %T %s back: %v", obj, obj.GetName(), err)
	}
	return obj
}

// simulatorInput is objs as the simulator reads them, each a document as
// kubectl get -o json prints it, through the same loader as `simulate -f`.
// The KWOKNodeClasses get the live controller's default faults: the kwok
// provider's --kwok-registration-delay is 0, so a Node appears during its
// launch; the simulator's own default is 30s.
func simulatorInput(t *testing.T, objs ...client.Object) *manifests.Set {
	t.Helper()
	var docs [][]byte
	for _, o := range objs {
		o = o.DeepCopyObject().(client.Object)
		if c, ok := o.(*kwokv1alpha1.KWOKNodeClass); ok {
			if c.Spec.Faults == nil {
				c.Spec.Faults = &kwokv1alpha1.KWOKFaults{}
			}
			if c.Spec.Faults.RegistrationDelay == nil {
				c.Spec.Faults.RegistrationDelay = &metav1.Duration{}
			}
		}
		gvk, err := apiutil.GVKForObject(o, operator.Scheme())
		if err != nil {
			t.Fatal(err)
		}
		o.GetObjectKind().SetGroupVersionKind(gvk)
		doc, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	set, problems := manifests.LoadOnto(manifests.Base{Origin: "e2e", Docs: docs})
	if len(problems) > 0 {
		t.Fatalf("the simulator cannot read the scenario: %v", problems)
	}
	return set
}

// simulateLikeController runs the simulator over set for duration with
// events, configured as the e2e controller runs: its disruption interval
// (controllerArgs), the provisioner's and planner's defaults, which both
// share, and a sample every second, so that each live sample has the
// simulated count of the same second.
func simulateLikeController(t *testing.T, set *manifests.Set, duration time.Duration, events []simulate.Event) *simulate.Result {
	t.Helper()
	tl, err := simulate.ParseTimeline("fidelity", []byte(fmt.Sprintf("duration: %s\nsample: 1s\n", duration)))
	if err != nil {
		t.Fatal(err)
	}
	tl.Events = events
	e, err := simulate.New(set, simulate.Options{Timeline: tl, DisruptionInterval: controllerDuration(t, "--disruption-interval")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// controllerDuration is the duration flag the e2e controller is given.
func controllerDuration(t *testing.T, flag string) time.Duration {
	for _, a := range controllerArgs {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("controller flag %s: %v", a, err)
			}
			return d
		}
	}
	t.Fatalf("the e2e controller is not given %s", flag)
	return 0
}

// scaleAt is a timeline event that sets a Deployment's replicas at an
// instant.
func scaleAt(at time.Duration, ns, name string, replicas int32) simulate.Event {
	return simulate.Event{At: &simulate.Duration{Duration: at},
		Scale: &simulate.ScaleAction{Kind: "Deployment", Namespace: ns, Name: name, Replicas: &replicas}}
}

// fidelityRow is one minute of a comparison.
type fidelityRow struct {
	minute int
	at     time.Duration // of the live sample
	live   int
	// sim is the simulated count at the live sample's second; low and
	// high bound the simulated counts within fidelityShift of it.
	sim, low, high int
	// near says some simulated count within fidelityShift is within the
	// tolerance.
	near bool
}

// fidelityShift is how far in time a live count may be from the same
// simulated count. The live cluster's timing is its own: which node
// kube-scheduler finds ready first decides which jobs share a node, and
// so when each node empties, and a loaded machine delays every loop.
// During a fast scale-down, five nodes in 30 s, that alone moves the
// count by more than the tolerance at the same second.
const fidelityShift = 30 * time.Second

// within reports whether a simulated count n is within one node or 10% of
// the live count, whichever is larger.
func (r fidelityRow) within(n int) bool {
	return math.Abs(float64(r.live-n)) <= math.Max(1, 0.1*float64(r.live))
}

// compareFidelity compares, at each whole minute of the live run, the live
// sample taken nearest to it (within 15s) with the simulated count at the
// same second, writes the table to the log and to a file kept in the
// system's temporary folder, and fails when the counts differ by more than
// one node or 10% of the live count, whichever is larger, at the same
// second and at every second within fidelityShift of it.
func compareFidelity(t *testing.T, scenario string, live []fidelitySample, res *simulate.Result) {
	t.Helper()
	sim := map[time.Duration]int{}
	for _, s := range res.Samples {
		sim[s.At.Duration] = s.Nodes
	}
	var rows []fidelityRow
	for m := 0; ; m++ {
		mark := time.Duration(m) * time.Minute
		if len(live) == 0 || mark > live[len(live)-1].at+15*time.Second {
			break
		}
		best := -1
		for i, s := range live {
			if d := (s.at - mark).Abs(); d <= 15*time.Second && (best < 0 || d < (live[best].at-mark).Abs()) {
				best = i
			}
		}
		if best < 0 {
			continue
		}
		s := live[best]
		n, ok := sim[s.at]
		if !ok {
			t.Errorf("%s: no simulated sample at %s", scenario, s.at)
			continue
		}
		r := fidelityRow{minute: m, at: s.at, live: s.nodes, sim: n, low: n, high: n}
		for at := s.at - fidelityShift; at <= s.at+fidelityShift; at += time.Second {
			if v, ok := sim[at]; ok {
				r.low, r.high = min(r.low, v), max(r.high, v)
				r.near = r.near || r.within(v)
			}
		}
		rows = append(rows, r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s, nodes of the NodePool:\n\n| minute | live (sampled at) | simulated, same second | simulated, within 30 s | |\n|---|---|---|---|---|\n",
		scenario, time.Now().UTC().Format("2006-01-02"))
	for _, r := range rows {
		note := ""
		switch {
		case !r.near:
			note = "beyond tolerance"
		case !r.within(r.sim):
			note = "beyond tolerance at the same second"
		}
		fmt.Fprintf(&b, "| %d | %d (%s) | %d | %d-%d | %s |\n", r.minute, r.live, r.at, r.sim, r.low, r.high, note)
	}
	t.Logf("fidelity of simulate, %s", b.String())
	file := filepath.Join(os.TempDir(), "nodewright-fidelity-"+strings.ReplaceAll(scenario, " ", "-")+".md")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err == nil {
		t.Logf("the table is kept at %s", file)
	}
	for _, r := range rows {
		if !r.near {
			t.Errorf("%s: at minute %d the live NodePool had %d nodes, the simulation %d (%d to %d within %s): more than one node or 10%% apart",
				scenario, r.minute, r.live, r.sim, r.low, r.high, fidelityShift)
		}
	}
	if len(rows) == 0 {
		t.Errorf("%s: no live sample to compare", scenario)
	}
}

// runnerDeployments are the simulator's form of a runner load: each job a
// Deployment of the runner pod, scaled to one at the job's start and to
// none at its end, as runRunners creates and deletes the pod. A job's pod
// is deleted at start+length whether or not it ran by then, which a
// simulated Job, timed from its binding, would not say.
func runnerDeployments(ns, pool string, jobs []runnerJob, horizon time.Duration) ([]client.Object, []simulate.Event) {
	var objs []client.Object
	var events []simulate.Event
	for _, j := range jobs {
		p := runnerPod(ns, pool, j.name)
		labels := map[string]string{"nodewright.dev/runner-job": j.name}
		for k, v := range p.Labels {
			labels[k] = v
		}
		objs = append(objs, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: j.name},
			Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: p.Annotations}, Spec: p.Spec}},
		})
		events = append(events, scaleAt(j.start, ns, j.name, 1))
		if end := j.start + j.length; end <= horizon {
			events = append(events, scaleAt(end, ns, j.name, 0))
		}
	}
	return objs, events
}

// runnerFidelity compares a run of runRunners with the simulation of the
// same NodePool, KWOKNodeClass and load.
func runnerFidelity(t *testing.T, r *runnerRun, ns string, jobs []runnerJob) {
	t.Helper()
	live := make([]fidelitySample, len(r.samples))
	for i, s := range r.samples {
		live[i] = fidelitySample{at: s.at, nodes: s.nodes}
	}
	if len(live) == 0 {
		t.Errorf("%s: no live sample to compare", r.pool)
		return
	}
	duration := live[len(live)-1].at.Truncate(time.Minute) + time.Minute
	objs := []client.Object{
		liveObject(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}),
		liveObject(t, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: r.pool}}),
		liveObject(t, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: r.pool}}),
	}
	deployments, events := runnerDeployments(ns, r.pool, jobs, duration)
	res := simulateLikeController(t, simulatorInput(t, append(objs, deployments...)...), duration, events)
	compareFidelity(t, "runners "+r.pool, live, res)
}

// mixedFidelity compares the mixed-shapes run with the simulation of the
// same NodePool, KWOKNodeClass and Deployments, all created at the start.
func mixedFidelity(t *testing.T, pool, ns string, deployments []string, live []fidelitySample) {
	t.Helper()
	if len(live) == 0 {
		t.Errorf("%s: no live sample to compare", pool)
		return
	}
	objs := []client.Object{
		liveObject(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}),
		liveObject(t, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: pool}}),
		liveObject(t, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}),
	}
	for _, d := range deployments { // in the order the test created them
		objs = append(objs, liveObject(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d}}))
	}
	duration := live[len(live)-1].at.Truncate(time.Minute) + time.Minute
	res := simulateLikeController(t, simulatorInput(t, objs...), duration, nil)
	compareFidelity(t, "mixed shapes", live, res)
}

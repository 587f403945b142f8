package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/planner"
)

// runnerJob is one CI job: a do-not-disrupt pod that runs from start to
// start+length, then ends (the test deletes it, as a finished job goes).
type runnerJob struct {
	name          string
	start, length time.Duration
}

// runnerLoad is the CI-runner workload: a peak of 100 jobs at once, then
// one job every 40s, each 2 to 10 minutes long, for 12 minutes.
func runnerLoad(seed int64) []runnerJob {
	rng := rand.New(rand.NewSource(seed))
	length := func() time.Duration { return 2*time.Minute + time.Duration(rng.Int63n(int64(8*time.Minute))) }
	var jobs []runnerJob
	for i := 0; i < 100; i++ {
		jobs = append(jobs, runnerJob{name: fmt.Sprintf("peak-%03d", i), length: length()})
	}
	for t := 40 * time.Second; t <= 12*time.Minute; t += 40 * time.Second {
		jobs = append(jobs, runnerJob{name: fmt.Sprintf("job-%03d", int(t/time.Second)), start: t, length: length()})
	}
	return jobs
}

// runnerSample is one look at the fleet: when, how many nodes, and how
// many the running jobs needed.
type runnerSample struct {
	at          time.Duration
	nodes, need int
}

// runnerRun is what one run of the load saw.
type runnerRun struct {
	pool    string
	counts  []string // "m:ss nodes/needed"
	samples []runnerSample
	evicted []string
	// taintDeleted counts runners kube-controller-manager's taint manager
	// deleted with no Evicted or Disrupted event from nodewright: logged, not
	// failed.
	taintDeleted int
	last         int // nodes at the end
	need         int // nodes the load needed at the end
}

// runRunners plays jobs on a pool whose c5.2xlarge nodes hold five runners
// each, sampling the node count every 30s. A job whose pod is gone or
// terminating before the test ends it was evicted.
func runRunners(t *testing.T, pool, ns string, jobs []runnerJob) *runnerRun {
	run := &runnerRun{pool: pool}
	ctx := context.Background()
	begin := time.Now()
	type live struct {
		job runnerJob
		end time.Time
	}
	pending := append([]runnerJob(nil), jobs...)
	sort.SliceStable(pending, func(i, j int) bool { return pending[i].start < pending[j].start })
	var running []live
	nodeOf := map[string]string{} // each runner's node, as last sampled
	nextSample := begin
	horizon := begin.Add(14 * time.Minute)
	for time.Now().Before(horizon) {
		now := time.Now()
		// The sample comes before the pods due now are created: it is the
		// count at this second, which the simulation's sample of the same
		// second matches. Taken after 100 creates on a busy machine, it
		// once caught the first nodes mid-launch at "0:00".
		if !now.Before(nextSample) {
			var pods corev1.PodList
			if err := kc.List(ctx, &pods, client.InNamespace(ns)); err == nil {
				for _, p := range pods.Items {
					if p.Spec.NodeName != "" {
						nodeOf[p.Name] = p.Spec.NodeName
					}
				}
			}
			nodes, err := nodesOf(pool)
			if err == nil {
				run.last = len(nodes)
				run.need = (len(running) + 4) / 5
				el := now.Sub(begin).Round(time.Second)
				run.counts = append(run.counts, fmt.Sprintf("%d:%02d %d/%d", int(el.Minutes()), int(el.Seconds())%60, run.last, run.need))
				run.samples = append(run.samples, runnerSample{at: el, nodes: run.last, need: run.need})
			}
			nextSample = nextSample.Add(30 * time.Second)
		}
		for len(pending) > 0 && now.Sub(begin) >= pending[0].start {
			j := pending[0]
			pending = pending[1:]
			if err := kc.Create(ctx, runnerPod(ns, pool, j.name)); err != nil {
				t.Errorf("creating runner %s: %v", j.name, err)
				continue
			}
			running = append(running, live{job: j, end: now.Add(j.length)})
		}
		var keep []live
		for _, l := range running {
			if now.Before(l.end) {
				keep = append(keep, l)
				continue
			}
			var p corev1.Pod
			err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.job.name}, &p)
			if apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil) {
				fate := l.job.name + " (" + podFate(ns, l.job.name, err == nil, nodeOf[l.job.name]) + ")"
				if strings.Contains(fate, "TaintManagerEviction") && !strings.Contains(fate, "nodewright Evicted") && !strings.Contains(fate, "nodewright Disrupted") {
					// kube-controller-manager's taint manager, not a
					// disruption: its node informer can lag its pod
					// informer on this busy machine, so a runner bound
					// the moment nodewright removed karpenter.sh/unregistered
					// (NoExecute) is judged against the taint still there.
					// Seen once in CI on the first two nodes of a run.
					t.Logf("%s: runner deleted by kube-controller-manager's taint manager, not by nodewright: %s", pool, fate)
					run.taintDeleted++
					continue
				}
				run.evicted = append(run.evicted, fate)
				continue
			}
			if err := kc.Delete(ctx, &p); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("ending runner %s: %v", l.job.name, err)
			}
		}
		running = keep
		time.Sleep(250 * time.Millisecond) // the job clock's tick, not a wait for a condition
	}
	return run
}

// podFate says what is known of a runner that went before its job ended:
// whether it was deleted or is terminating, the node it was last seen on and
// whether that node is still there, and the pod's events.
func podFate(ns, name string, terminating bool, node string) string {
	ctx := context.Background()
	fate := "gone"
	if terminating {
		fate = "terminating"
	}
	if node != "" {
		var n corev1.Node
		switch err := kc.Get(ctx, client.ObjectKey{Name: node}, &n); {
		case apierrors.IsNotFound(err):
			fate += ", its node " + node + " is gone"
		case err == nil && n.DeletionTimestamp != nil:
			fate += ", its node " + node + " is being deleted"
		case err == nil:
			fate += fmt.Sprintf(", on node %s (taints %v)", node, n.Spec.Taints)
		}
	}
	var events corev1.EventList
	if err := kc.List(ctx, &events, client.InNamespace(ns)); err == nil {
		for _, e := range events.Items {
			if e.InvolvedObject.Name == name {
				fate += fmt.Sprintf("; event %s %s: %s", e.Source.Component, e.Reason, e.Message)
			}
		}
	}
	return fate
}

func runnerPod(ns, pool, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "runner"},
			Annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: pool},
			TerminationGracePeriodSeconds: ptr(int64(0)),
			// What the DefaultTolerationSeconds admission plugin gives every
			// pod of a real cluster. The test cluster runs without admission
			// plugins, so without these a node whose simulated kubelet missed
			// a heartbeat on this busy machine had its runners deleted at
			// once by kube-controller-manager's taint-eviction controller
			// (seen in CI: TaintManagerEviction), which is not a disruption.
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
			},
			Containers: []corev1.Container{{Name: "runner", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
		},
	}
}

func runnerPool(t *testing.T, name string, attrition bool) {
	nodeClass(t, name, nil)
	nodePool(t, name, name, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.2xlarge"))
		np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("30s")
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
		if attrition {
			np.Annotations = map[string]string{planner.DrainByAttritionAnnotation: "true"}
		}
	})
}

// TestDrainByAttritionShrinksRunnerFleet: CI runners (do-not-disrupt, 2-10
// minutes each) peak at 100 jobs on 20 nodes, then arrive at one every 40s.
// With drain by attrition, from 11 minutes in (the longest job, 10
// minutes, after the peak, and a minute for the loops), the fleet is what
// the load needs, with two nodes of slack, one from 13 minutes, and it ends
// smaller than the fleet without it; no runner is ever evicted; and
// `simulate`, given the same NodePools and load, counts the same nodes
// minute by minute, within a node or 10%, give or take 30 s
// (compareFidelity). The same load on a NodePool
// without it is run beside it, for comparison: kube-scheduler spreads new
// jobs over the half-empty nodes, so consolidation can rarely take one.
func TestDrainByAttritionShrinksRunnerFleet(t *testing.T) {
	t.Parallel()
	const seed = 20261123
	t.Logf("random seed %d", seed)
	jobs := runnerLoad(seed)
	runs := map[bool]*runnerRun{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, attrition := range []bool{true, false} {
		name := map[bool]string{true: "runners-attrition", false: "runners-plain"}[attrition]
		runnerPool(t, name, attrition)
		namespace(t, "e2e-"+name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := runRunners(t, name, "e2e-"+name, jobs)
			mu.Lock()
			runs[attrition] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, attrition := range []bool{true, false} {
		r := runs[attrition]
		t.Logf("%s (nodes/needed every 30s): %s; runners deleted by the taint manager: %d", r.pool, strings.Join(r.counts, ", "), r.taintDeleted)
		if len(r.evicted) > 0 {
			t.Errorf("%s: do-not-disrupt runners evicted: %v", r.pool, r.evicted)
		}
		// The same load simulated: the fidelity of simulate (docs/simulate.md).
		runnerFidelity(t, r, "e2e-"+r.pool, jobs)
	}
	with, without := runs[true], runs[false]
	// From 11:00, the longest job (10 minutes) after the peak plus a
	// minute for the loops, the fleet is what the load needs with two nodes
	// of slack, and from 13:00 with one: the load moves by a job every 40 s,
	// and a job that landed on a node just before it began draining holds
	// it to its end, which is the point of never evicting it. Alone on this
	// machine the fleet was at 3 for 2 from 10:30 and at 2 from 13:30.
	// When only the open nodes' room counted for draining, CI, beside the
	// other tests, held 4 for 2 from 10:30 to the end and failed here.
	for _, s := range with.samples {
		slack := map[bool]int{true: 1, false: 2}[s.at >= 13*time.Minute]
		if s.at >= 11*time.Minute && s.nodes > s.need+slack {
			t.Errorf("with drain by attrition the fleet was at %d nodes at %s for a load needing %d", s.nodes, s.at, s.need)
		}
	}
	if without.last <= with.last {
		t.Errorf("without drain by attrition the fleet ended at %d nodes, not more than with it (%d): the comparison shows nothing", without.last, with.last)
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// soakEvents is how many random events the soak test plays: 150 in the
// default run, NODEWRIGHT_SOAK_EVENTS for longer ones (`make soak` plays 2,000).
func soakEvents() int {
	if v, err := strconv.Atoi(os.Getenv("NODEWRIGHT_SOAK_EVENTS")); err == nil && v > 0 {
		return v
	}
	return 150
}

// soakWatch checks invariants while the soak runs, for every Deployment:
// the PDB'd one never has fewer ready pods than its minAvailable once it
// reached it; no pod a disruption evicted, of any Deployment, is left with
// nowhere to go; and no do-not-disrupt job pod goes before the test ends it.
//
// An evicted pod is seen through its replacement. The test records when it
// creates or scales each Deployment; a pod its ReplicaSet makes well after
// that (replicaSetQuiet) can only replace one that went, and the soak
// deletes no Deployment pod itself, so it replaces a pod evicted from a
// node being disrupted. kube-scheduler marking such a pod Unschedulable
// means its node was taken away with no room left for it (the soak sets no
// deadline that could force it). Pods made soon after a scale are not
// judged: they may be the scale's own, waiting for a node being launched.
// Nor is a replacement whose room a pod made with or after its eviction
// took (a bare or job pod, or one of a scale-up, bound meanwhile): the
// drain checked for room before that pod existed, and kube-scheduler gives
// the room to whichever comes first; such races are counted and logged.
type soakWatch struct {
	mu         sync.Mutex
	jobs       map[string]time.Time // do-not-disrupt pods the test has not ended, and when it created them
	deploys    map[string]*deployWatch
	violations []string
	// races are replacements that found no node because a pod made with
	// or after their eviction took the room: counted, not failed.
	races []string
	// homelessAt is when each replacement with nowhere to go was seen: the
	// controller's log before it is printed, to tell why.
	homelessAt []time.Time
	reached    bool // the PDB'd Deployment had minAvailable ready pods
	stop, done chan struct{}
}

// deployWatch is what the watch knows of one Deployment, by its app label.
type deployWatch struct {
	changed  time.Time       // when the test last created or scaled it
	moved    map[string]bool // its pods that replaced evicted ones
	homeless map[string]bool // of those, the ones kube-scheduler found no node for
	raced    map[string]bool // of those, the ones whose room a newer pod took
}

// replicaSetQuiet is how long after a Deployment is created or scaled its
// ReplicaSet may still be making the pods of that change.
const replicaSetQuiet = 15 * time.Second

func newSoakWatch() *soakWatch {
	return &soakWatch{jobs: map[string]time.Time{}, deploys: map[string]*deployWatch{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// changed records that the test created or scaled the Deployment of app.
func (w *soakWatch) changed(app string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.deploys[app]
	if d == nil {
		d = &deployWatch{moved: map[string]bool{}, homeless: map[string]bool{}, raced: map[string]bool{}}
		w.deploys[app] = d
	}
	d.changed = time.Now()
}

// moved counts, per Deployment, the pods that replaced evicted ones and
// those of them that found no node.
func (w *soakWatch) moved() (moved, homeless map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	moved, homeless = map[string]int{}, map[string]int{}
	for app, d := range w.deploys {
		moved[app], homeless[app] = len(d.moved), len(d.homeless)
	}
	return moved, homeless
}

func (w *soakWatch) run(ns, guarded string, minAvailable int) {
	defer close(w.done)
	for {
		var pods corev1.PodList
		listed := time.Now()
		if err := kc.List(context.Background(), &pods, client.InNamespace(ns)); err == nil {
			w.look(pods.Items, listed, guarded, minAvailable)
		}
		select {
		case <-w.stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// look judges one list of the soak's pods, taken at listed.
func (w *soakWatch) look(pods []corev1.Pod, listed time.Time, guarded string, minAvailable int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ready, present := 0, map[string]bool{}
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp == nil {
			present[p.Name] = true
		}
		app := p.Labels["app"]
		if app == guarded && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(p) {
			ready++
		}
		d := w.deploys[app]
		// creationTimestamp has whole seconds: a second of slack.
		if d == nil || !p.CreationTimestamp.Add(time.Second).After(d.changed.Add(replicaSetQuiet)) {
			continue
		}
		d.moved[p.Name] = true
		if why, ok := unschedulable(p); ok && !d.homeless[p.Name] && !d.raced[p.Name] {
			if q, ok := w.newcomerBound(pods, p); ok {
				// The room was there when the pod was evicted; a pod the
				// test made as it went took it first.
				d.raced[p.Name] = true
				w.races = append(w.races, fmt.Sprintf("%s: %s pod %s, which replaces an evicted one, found no node after %s, made with or after its eviction, was bound", time.Now().Format(time.TimeOnly), app, p.Name, q))
				continue
			}
			d.homeless[p.Name] = true
			w.homelessAt = append(w.homelessAt, time.Now())
			w.violations = append(w.violations, fmt.Sprintf("%s: %s pod %s, which replaces an evicted one, has nowhere to go: %s", time.Now().Format(time.TimeOnly), app, p.Name, why))
		}
	}
	if ready >= minAvailable {
		w.reached = true
	} else if w.reached {
		w.violations = append(w.violations, fmt.Sprintf("%s: %d %s pods ready, PDB minAvailable %d", time.Now().Format(time.TimeOnly), ready, guarded, minAvailable))
	}
	for name, created := range w.jobs {
		// A job created after the list began may not be in it.
		if created.Before(listed) && !present[name] {
			w.violations = append(w.violations, fmt.Sprintf("%s: do-not-disrupt pod %s went before its job ended", time.Now().Format(time.TimeOnly), name))
			delete(w.jobs, name)
		}
	}
}

// newcomerBound finds a pod the test made (a bare or job pod, or a pod of
// a scale-up) with or after the eviction that replacement p stands for, and
// that kube-scheduler has bound: the drain's room check looked at the
// cluster before that pod existed, and kube-scheduler gives the room to
// whichever of them it takes first. The eviction is placed at p's creation,
// less the room check's 2 s memory and a second for whole-second
// timestamps. Called with w.mu held.
func (w *soakWatch) newcomerBound(pods []corev1.Pod, p *corev1.Pod) (string, bool) {
	since := p.CreationTimestamp.Add(-3 * time.Second)
	for i := range pods {
		q := &pods[i]
		if q.Name == p.Name || q.Spec.NodeName == "" || q.DeletionTimestamp != nil || q.CreationTimestamp.Time.Before(since) {
			continue
		}
		d := w.deploys[q.Labels["app"]]
		if d != nil && q.CreationTimestamp.Add(time.Second).After(d.changed.Add(replicaSetQuiet)) {
			continue // a replacement itself, part of some drain
		}
		return q.Name, true
	}
	return "", false
}

// unschedulable reports whether kube-scheduler found no node for p, and why.
func unschedulable(p *corev1.Pod) (string, bool) {
	if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
		return "", false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message, true
		}
	}
	return "", false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestSoakRandomEvents plays random events on one NodePool that
// consolidates and drifts: two Deployments scaled up and down, do-not-disrupt
// jobs started and ended, bare pods created and deleted, NodePool edits
// (template labels, which drift every node; consolidateAfter; budgets) and
// controller SIGKILLs. Throughout, a Deployment guarded by a PDB never
// drops below its minAvailable, no pod of any Deployment evicted by a
// disruption is left with nowhere to go, and no do-not-disrupt pod is
// evicted; at the
// end, with the remaining jobs ended and the template changed once more,
// every node is replaced and every pod runs. Runs alone: it kills the
// shared controller.
func TestSoakRandomEvents(t *testing.T) {
	const pool, ns = "soak", "e2e-soak"
	const seed = 424242
	t.Logf("random seed %d, %d events", seed, soakEvents())
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		consolidating(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized)(np)
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "50%"}}
	})
	namespace(t, ns)
	sel := map[string]string{karpv1.NodePoolLabelKey: pool}
	w := newSoakWatch()
	// The watch judges every Deployment: guarded (never scaled, with a PDB),
	// web and big (scaled by the events, of two pod shapes).
	for _, d := range soakDeployments {
		w.changed(d.name)
		deployment(t, ns, d.name, d.replicas, sel, d.shape)
	}
	minAvailable := intstr.FromInt32(3)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guarded"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}}}
	if err := kc.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	go w.run(ns, "guarded", 3)
	var jobs, bare []string
	counts := map[string]int{}
	for i := 0; i < soakEvents(); i++ {
		kind := []string{"scale", "scale", "job", "job", "end-job", "end-job", "bare", "delete-bare", "label", "consolidate-after", "budget", "restart"}[rng.Intn(12)]
		switch kind {
		case "scale":
			d := soakDeployments[1+rng.Intn(len(soakDeployments)-1)]
			w.changed(d.name)
			scale(t, ns, d.name, int32(rng.Intn(int(d.max)+1)))
		case "job":
			name := fmt.Sprintf("job-%d", i)
			p := soakPod(ns, name, sel, map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"})
			if err := kc.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			created := time.Now() // a list begun after this sees the pod
			jobs = append(jobs, name)
			w.mu.Lock()
			w.jobs[name] = created
			w.mu.Unlock()
		case "end-job":
			if len(jobs) == 0 {
				continue
			}
			k := rng.Intn(len(jobs))
			name := jobs[k]
			jobs = append(jobs[:k], jobs[k+1:]...)
			w.mu.Lock()
			delete(w.jobs, name)
			w.mu.Unlock()
			if err := kc.Delete(ctx, soakPod(ns, name, nil, nil)); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		case "bare":
			name := fmt.Sprintf("bare-%d", i)
			if err := kc.Create(ctx, soakPod(ns, name, sel, nil)); err != nil {
				t.Fatal(err)
			}
			bare = append(bare, name)
		case "delete-bare":
			if len(bare) == 0 {
				continue
			}
			k := rng.Intn(len(bare))
			if err := kc.Delete(ctx, soakPod(ns, bare[k], nil, nil)); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			bare = append(bare[:k], bare[k+1:]...)
		case "label":
			v := strconv.Itoa(i)
			patchPool(t, pool, func(np *karpv1.NodePool) { np.Spec.Template.Labels = map[string]string{"soak-rev": v} })
		case "consolidate-after":
			v := []string{"0s", "5s", "20s", "Never"}[rng.Intn(4)]
			patchPool(t, pool, func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration(v) })
		case "budget":
			v := []string{"0", "1", "50%", "100%"}[rng.Intn(4)]
			patchPool(t, pool, func(np *karpv1.NodePool) { np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: v}} })
		case "restart":
			if err := env.KillController(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if err := env.StartController(); err != nil {
				t.Fatal(err)
			}
		}
		counts[kind]++
		time.Sleep(time.Duration(200+rng.Intn(1600)) * time.Millisecond) // the pace of the events, not a wait for a condition
	}
	t.Logf("events played: %v", counts)
	movedInEvents, _ := w.moved()
	// End the jobs still running and drift every node once more, with a
	// budget that lets it. Whether the random events evicted a guarded pod
	// depends on timing (a job pod on its node holds the node), so this last
	// drift is what makes sure the evicted-pods-have-room check sees evictions:
	// every node the guarded pods run on now is replaced.
	for _, name := range jobs {
		w.mu.Lock()
		delete(w.jobs, name)
		w.mu.Unlock()
		if err := kc.Delete(ctx, soakPod(ns, name, nil, nil)); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	patchPool(t, pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("5s")
		np.Spec.Template.Labels = map[string]string{"soak-rev": "final"}
	})
	eventually(t, 6*time.Minute, "every soak pod Running on a node of the last template", func() (bool, error) {
		running, other, err := podCounts(ns)
		if err != nil || other > 0 {
			return false, errorf("%d running, %d not (err %v)", running, other, err)
		}
		nodes, err := nodesOf(pool)
		if err != nil {
			return false, err
		}
		for _, n := range nodes {
			if n.Labels["soak-rev"] != "final" {
				return false, errorf("node %s still has soak-rev %q", n.Name, n.Labels["soak-rev"])
			}
		}
		return true, nil
	})
	close(w.stop)
	<-w.done
	for _, v := range w.violations {
		t.Error(v)
	}
	for _, at := range w.homelessAt {
		t.Logf("the controller's decisions in the 90s before %s:\n%s", at.Format(time.TimeOnly), decisionsBefore(at, 90*time.Second))
	}
	for _, r := range w.races {
		t.Log(r)
	}
	nodes, _ := nodesOf(pool)
	running, _, _ := podCounts(ns)
	moved, homeless := w.moved()
	total := 0
	for _, d := range soakDeployments {
		t.Logf("%s: %d pods replaced evicted ones (%d during the events), %d of them found no room", d.name, moved[d.name], movedInEvents[d.name], homeless[d.name])
		total += moved[d.name]
	}
	t.Logf("after %d events and a last drift: %d pods Running on %d nodes; %d pods of Deployments replaced evicted ones, %d of them found no node because a newer pod took the room; %d invariant violations",
		soakEvents(), running, len(nodes), total, len(w.races), len(w.violations))
	if moved["guarded"] == 0 {
		t.Error("no guarded pod was ever evicted and replaced: the check that evicted pods have somewhere to go saw nothing")
	}
}

// soakDeployments are the soak's Deployments: the first, guarded by a PDB,
// is never scaled; the events scale the others between 0 and max.
var soakDeployments = []struct {
	name          string
	replicas, max int32
	shape         podShape
}{
	{name: "guarded", replicas: guardedReplicas, max: guardedReplicas, shape: podShape{cpu: "700m", memory: "512Mi"}},
	{name: "web", replicas: 6, max: 15, shape: podShape{cpu: "500m", memory: "512Mi"}},
	{name: "big", replicas: 2, max: 6, shape: podShape{cpu: "1500m", memory: "2Gi"}},
}

// guardedReplicas is the size of the soak's PDB'd Deployment, never scaled.
const guardedReplicas = 4

func soakPod(ns, name string, sel, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{NodeSelector: sel, TerminationGracePeriodSeconds: ptr(int64(0)),
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}},
	}
}

// decisionsBefore returns the controller log's lines of the window before
// at that say what it decided: disruptions, evictions (with the pods), pods
// held for want of room, NodeClaims made, and restarts.
func decisionsBefore(at time.Time, window time.Duration) string {
	b, err := os.ReadFile(env.ControllerLog())
	if err != nil {
		return err.Error()
	}
	keys := []string{"disrupting NodeClaim", "evicted pods", "room", "created NodeClaim", "planned pending pods", "leader", "starting"}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		var entry struct {
			Time time.Time `json:"time"`
		}
		if json.Unmarshal([]byte(line), &entry) != nil || entry.Time.Before(at.Add(-window)) || entry.Time.After(at) {
			continue
		}
		for _, k := range keys {
			if strings.Contains(line, k) {
				if len(line) > 1500 {
					line = line[:1500] + "..."
				}
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/devcluster"
)

// probeAddr is where the shared controller serves its probes.
var probeAddr string

// probeFlag picks a free port for the shared controller's probes, so that
// TestAPIServerOutage can watch its readiness.
func probeFlag() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("e2e: finding a port for the controller's probes: %v", err))
	}
	probeAddr = l.Addr().String()
	l.Close()
	return "--health-probe-bind-address=" + probeAddr
}

// outage is how long kube-apiserver stays stopped: ten times the renew
// deadline, so that the controller loses its lease.
const outage = 30 * time.Second

// TestAPIServerOutage stops kube-apiserver for 30 s during a scale-up and
// during a drain. The controller reports not ready while the server is
// away and ready again after; its process is never restarted; the scale-up
// finishes without duplicate NodeClaims and the drain without taking a
// Deployment below its PodDisruptionBudget; no node or NodeClaim leaks.
// Runs alone: it stops the shared API server.
func TestAPIServerOutage(t *testing.T) {
	if probeAddr == "" {
		t.Fatal("the shared controller serves no probes (main_test.go does not pass probeFlag)")
	}
	t.Run("DuringScaleUp", testOutageDuringScaleUp)
	t.Run("DuringDrain", testOutageDuringDrain)
}

func testOutageDuringScaleUp(t *testing.T) {
	const pool, ns, pods = "outage-up", "e2e-outage-up", 300
	// Registration takes 8 s, so that NodeClaims are in flight, launched
	// but without a node, when the server goes.
	nodeClass(t, pool, &kwokv1alpha1.KWOKFaults{RegistrationDelay: &metav1.Duration{Duration: 8 * time.Second}})
	nodePool(t, pool, pool, nil)
	namespace(t, ns)
	rec := recordClaims(pool)
	pid := controllerPID(t)
	waitControllerReady(t, time.Minute)
	deployment(t, ns, "app", pods, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "500m", memory: "512Mi"})
	eventually(t, 3*time.Minute, "NodeClaims in flight", func() (bool, error) {
		cs, err := claimsOf(pool)
		return err == nil && len(cs) > 0, errorf("%d NodeClaims (%v)", len(cs), err)
	})
	inFlight := 0
	for _, c := range mustClaims(t, pool) {
		if c.Status.NodeName == "" {
			inFlight++
		}
	}
	t.Logf("stopping kube-apiserver with %d NodeClaims, %d of them without a node", len(mustClaims(t, pool)), inFlight)
	apiServerOutage(t)

	waitRunning(t, ns, pods, 8*time.Minute)
	checkSameController(t, pid)
	waitControllerReady(t, 2*time.Minute)
	_, displaced := checkNoDuplicates(t, rec, ns)
	claims, _, _ := waitNoLeaks(t, pool, 2*time.Minute)
	t.Logf("%d pods Running on %d NodeClaims after a %v outage; %d pods planned again within the grace, all displaced by the pods bound to their node",
		pods, claims, outage, displaced)
}

func testOutageDuringDrain(t *testing.T) {
	const pool, ns, pods = "outage-drain", "e2e-outage-drain", 24
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) { np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}} })
	namespace(t, ns)
	// One pod at a time may be away, so the drain of several nodes takes
	// many evictions, each waiting for a replacement to run.
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if err := kc.Create(context.Background(), pdb); err != nil {
		t.Fatal(err)
	}
	// A pod of 1 CPU each spreads them over several nodes.
	deployment(t, ns, "web", pods, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "1", memory: "1Gi"})
	waitRunning(t, ns, pods, 5*time.Minute)
	old := map[string]bool{}
	for _, c := range mustClaims(t, pool) {
		old[c.Name] = true
	}
	pid := controllerPID(t)
	waitControllerReady(t, time.Minute)
	w := watchPodsAcrossOutage(t, pods-1, ns)

	// Drift every node: the drain replaces them all.
	patchPool(t, pool, func(np *karpv1.NodePool) { np.Spec.Template.Labels = map[string]string{"release": "two"} })
	eventually(t, 3*time.Minute, "a drain under way", func() (bool, error) {
		cs, err := claimsOf(pool)
		draining := 0
		for _, c := range cs {
			if old[c.Name] && c.DeletionTimestamp != nil {
				draining++
			}
		}
		return err == nil && draining > 0, errorf("%d of %d old NodeClaims draining (%v)", draining, len(old), err)
	})
	left := 0
	for _, c := range mustClaims(t, pool) {
		if old[c.Name] {
			left++
		}
	}
	t.Logf("stopping kube-apiserver with %d of %d old NodeClaims left", left, len(old))
	apiServerOutage(t)

	eventually(t, 8*time.Minute, "every old NodeClaim drained and gone", func() (bool, error) {
		cs, err := claimsOf(pool)
		var still []string
		for _, c := range cs {
			if old[c.Name] {
				still = append(still, c.Name)
			}
		}
		return err == nil && len(still) == 0, errorf("still there: %v (%v)", still, err)
	})
	waitRunning(t, ns, pods, 3*time.Minute)
	checkSameController(t, pid)
	waitControllerReady(t, 2*time.Minute)
	claims, _, _ := waitNoLeaks(t, pool, 2*time.Minute)
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("drained %d NodeClaims, %d now; at least %d of %d web pods ran at all times (%d re-lists)", len(old), claims, w.minAvailable, pods, w.relists)
	if w.minAvailable < pods-1 {
		t.Errorf("only %d web pods were available at one point; the PodDisruptionBudget allows 1 of %d away", w.minAvailable, pods)
	}
}

// apiServerOutage stops kube-apiserver for the outage, sees the controller
// report not ready meanwhile, and starts the server again.
func apiServerOutage(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	if err := env.Cluster.StopComponent(ctx, devcluster.ComponentKubeAPIServer); err != nil {
		t.Fatal(err)
	}
	// Started again whatever happens, or every later test fails too.
	started := false
	defer func() {
		if !started {
			if err := env.Cluster.StartComponent(ctx, devcluster.ComponentKubeAPIServer); err != nil {
				t.Errorf("starting kube-apiserver again: %v", err)
			}
		}
	}()
	notReady := time.Duration(-1)
	var last string
	for time.Since(start) < outage {
		code, err := controllerReadyz()
		if notReady < 0 && err == nil && code != http.StatusOK {
			notReady = time.Since(start)
		}
		last = fmt.Sprintf("%d (%v)", code, err)
		time.Sleep(250 * time.Millisecond)
	}
	started = true
	if err := env.Cluster.StartComponent(ctx, devcluster.ComponentKubeAPIServer); err != nil {
		t.Fatalf("starting kube-apiserver again: %v", err)
	}
	t.Logf("kube-apiserver away for %v, serving again", time.Since(start).Round(time.Millisecond))
	if notReady < 0 {
		t.Errorf("the controller's /readyz never failed while kube-apiserver was stopped; last: %s", last)
	} else {
		t.Logf("the controller reported not ready %v into the outage", notReady.Round(time.Millisecond))
	}
}

// controllerReadyz asks the shared controller's readiness probe; an error means the
// probe did not answer at all.
func controllerReadyz() (int, error) {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://" + probeAddr + "/readyz")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func waitControllerReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "the controller ready", func() (bool, error) {
		code, err := controllerReadyz()
		return err == nil && code == http.StatusOK, errorf("readyz %d (%v)", code, err)
	})
}

// controllerPID is the pid of the shared controller's process.
func controllerPID(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.Cluster.Dir, "nodewright-controller.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// checkSameController fails unless the controller that ran before the
// outage still runs: never exited, never restarted.
func checkSameController(t *testing.T, pid int) {
	t.Helper()
	if !env.ControllerRunning() {
		t.Fatal("the controller process exited")
	}
	if now := controllerPID(t); now != pid {
		t.Fatalf("the controller runs as pid %d, %d before the outage: restarted", now, pid)
	}
	log, err := os.ReadFile(env.ControllerLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("controller pid %d throughout; its log says %d times that it lost the lease and %d times that it acquired it",
		pid, strings.Count(string(log), "lost the leader lease"), strings.Count(string(log), "successfully acquired lease"))
}

// podWatchAcrossOutage is a podWatch that lists and watches again when
// its watch ends, as every watch does when the API server goes: pods gone
// meanwhile count as gone.
type podWatchAcrossOutage struct {
	*podWatch
	relists int
}

func watchPodsAcrossOutage(t *testing.T, webWant int, ns string) *podWatchAcrossOutage {
	t.Helper()
	w := &podWatchAcrossOutage{podWatch: &podWatch{left: map[string]time.Time{}, web: map[string]bool{}, webWant: webWant, minAvailable: webWant}}
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: kc.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := w.follow(ctx, wc, ns); err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
	}()
	w.stop = func() { cancel(); <-done }
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// follow lists the pods, takes those no longer there as gone, and watches
// from the list until the watch ends.
func (w *podWatchAcrossOutage) follow(ctx context.Context, wc client.WithWatch, ns string) error {
	var pods corev1.PodList
	if err := wc.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return err
	}
	present := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		present[p.Namespace+"/"+p.Name] = true
		w.see(watch.Modified, p)
	}
	w.mu.Lock()
	w.relists++
	var gone []string
	for key := range w.web {
		if !present[key] {
			gone = append(gone, key)
		}
	}
	w.mu.Unlock()
	for _, key := range gone {
		nsName := strings.SplitN(key, "/", 2)
		w.see(watch.Deleted, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: nsName[0], Name: nsName[1], Labels: map[string]string{"app": "web"}}})
	}
	wi, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: pods.ResourceVersion}})
	if err != nil {
		return err
	}
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok {
			w.see(ev.Type, p)
		}
	}
	return nil
}

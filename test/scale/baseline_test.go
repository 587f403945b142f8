package scale

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	"github.com/nodewright/nodewright/internal/devcluster"
	"github.com/nodewright/nodewright/internal/devenv"
)

// planNode is a node nodewright's run ended with, as the baseline makes it
// again: the instance's labels and resources, nothing of nodewright's.
type planNode struct {
	name                  string
	labels                map[string]string
	capacity, allocatable corev1.ResourceList
	info                  corev1.NodeSystemInfo
}

// baseline is what the run with no autoscaler measured: the floor the
// control plane and kwok set for the same pods on the same nodes.
type baseline struct {
	nodes        int
	nodesReady   time.Duration // from the first node create to all Ready
	createPods   time.Duration
	toAllBound   time.Duration // < 0: not reached
	toAllRunning time.Duration // < 0: not reached
	// unplaced pods found no room on the plan's nodes (toAllRunning is
	// then the others').
	unplaced int
	// cpuAll is the CPU the cluster's components and this benchmark used
	// from the first create until every pod ran.
	cpuAll time.Duration
}

// planNodes lists the nodes a NodePool made, as the baseline re-creates them.
func planNodes(ctx context.Context, cs kubernetes.Interface) ([]planNode, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey})
	if err != nil {
		return nil, fmt.Errorf("listing the plan's nodes: %w", err)
	}
	out := make([]planNode, 0, len(list.Items))
	for _, n := range list.Items {
		out = append(out, planNode{name: n.Name, labels: n.Labels, capacity: n.Status.Capacity, allocatable: n.Status.Allocatable, info: n.Status.NodeInfo})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// baselineEnabled says whether each run is followed by its baseline
// (NODEWRIGHT_SCALE_BASELINE=0 turns it off).
func baselineEnabled() bool { return os.Getenv("NODEWRIGHT_SCALE_BASELINE") != "0" }

// idealEnabled says whether each run is also followed by the ideal
// reactive autoscaler's (NODEWRIGHT_SCALE_IDEAL=1; off by default, as it
// adds a third cluster to every run).
func idealEnabled() bool { return os.Getenv("NODEWRIGHT_SCALE_IDEAL") == "1" }

// runBaseline starts a fresh local cluster of the same make, creates the
// plan's nodes and waits until kwok reports every one Ready with no taint,
// then creates the same pods as the run did, with no autoscaler, and
// measures from the last create until every pod runs: kube-scheduler,
// kube-apiserver and kwok's own time, which no autoscaler can beat.
//
// With ideal, the nodes are not created beforehand but as the pods come:
// the i-th of n nodes once i/n of the pods were created, the moment their
// creates returned. That is an autoscaler that decides in no time, spends
// no CPU and knows the plan, but reacts as every autoscaler must: the
// nodes arrive after the pods they are for, kube-scheduler tries the pods
// before, and kube-controller-manager and kwok set up each node while pods
// are being scheduled. Its cost over the baseline is what reacting costs
// this machine, whatever the autoscaler.
func runBaseline(b *testing.B, cfg config, bin, kube string, run int, nodes []planNode, ideal bool) baseline {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := baseline{nodes: len(nodes), toAllBound: -1, toAllRunning: -1}
	label, suffix, how := "BASELINE", "baseline", "nodes of the plan, then"
	if ideal {
		label, suffix, how = "IDEAL", "ideal", "nodes of the plan created as the pods come,"
		if cfg.idealBatch > 0 {
			how = fmt.Sprintf("nodes of the plan created as the pods come, each at the close of its pod's %s batch,", cfg.idealBatch)
		}
	}
	name := fmt.Sprintf("scale-%d-%d-%s", os.Getpid(), run, suffix)
	logf("%s: starting local cluster %s: %d %s %d pods, no autoscaler", label, name, len(nodes), how, cfg.pods)
	env, err := devenv.Up(ctx, devcluster.Options{Name: name, BinariesDir: kube, WorkDir: cfg.workDir, Ephemeral: true, HeartbeatFactor: cfg.heartbeat, APIServerFlags: cfg.apiServerFlags, SchedulerFlags: cfg.schedulerFlags()}, bin)
	if err != nil {
		b.Fatal(err)
	}
	failed := true
	defer func() {
		if failed {
			var buf strings.Builder
			env.Cluster.DumpLogs(&buf, 20)
			logf("%s", buf.String())
		}
		if err := env.Down(context.Background()); err != nil {
			b.Errorf("tearing down the baseline: %v", err)
		}
	}()
	rc := rest.CopyConfig(env.Config)
	rc.QPS, rc.Burst = 2000, 4000
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	if err := createNamespace(ctx, cs); err != nil {
		b.Fatal(err)
	}
	if !ideal {
		tNodes := time.Now()
		if err := createPlanNodes(ctx, cs, nodes, nil); err != nil {
			b.Fatal(err)
		}
		if err := waitNodesReady(ctx, cs, len(nodes), 10*time.Minute); err != nil {
			b.Fatal(err)
		}
		res.nodesReady = time.Since(tNodes)
		logf("BASELINE: %d nodes Ready with no taint %.1fs after the first create", len(nodes), res.nodesReady.Seconds())
	}

	wcfg := rest.CopyConfig(rc)
	wcfg.Dial = (&net.Dialer{}).DialContext
	wcs, err := kubernetes.NewForConfig(wcfg)
	if err != nil {
		b.Fatal(err)
	}
	ccfg := rest.CopyConfig(env.Config)
	ccfg.QPS, ccfg.Burst = 500, 1000
	ccfg.Dial = (&net.Dialer{}).DialContext
	w := newWatcher(cfg.pods)
	if err := w.start(ctx, wcs, ccfg); err != nil {
		b.Fatal(err)
	}
	req0, _ := requestCounts(ctx, cs)
	comps := componentPIDs(env)
	compCPU0 := cpuReadings(comps)
	sched0, schedPort := schedulerReading(comps)
	selfCPU0 := procCPU(os.Getpid())
	if err := checkClusterFlags(comps, cfg.apiServerFlags, cfg.extraSchedulerFlags); err != nil {
		b.Fatal(err)
	}
	conns := connections(env.Config.Host, comps, 0)
	defer conns.close()

	var created atomic.Int64
	nodesDone := make(chan error, 1)
	if cfg.apiPprofDir != "" {
		defer inBackground(func(done <-chan struct{}) {
			apiserverProfileLoop(ctx, cs, cfg.apiPprofDir, fmt.Sprintf("run%d-%s", run, suffix), done)
		})()
	}
	if cfg.schedPprofDir != "" && schedPort != 0 {
		defer inBackground(func(done <-chan struct{}) {
			schedulerProfileLoop(ctx, schedPort, cfg.schedPprofDir, fmt.Sprintf("run%d-%s", run, suffix), done)
		})()
	}
	tStart := time.Now()
	var lastAt atomic.Int64 // the last create's time from tStart; -1 until then
	lastAt.Store(-1)
	if ideal {
		// Node i is for the pods after the first i/n of them: it is due
		// once those exist, and with batches once their batch closes.
		// reached[i] is when they all existed, from tStart (-1: not yet).
		reached := make([]atomic.Int64, len(nodes))
		for i := range reached {
			reached[i].Store(-1)
		}
		need := func(i int) int64 { return int64((i + 1) * cfg.pods / len(nodes)) }
		idle := provisioning.DefaultOptions().BatchIdle // the controller's own
		go func() {
			for j := 0; j < len(nodes) && ctx.Err() == nil; time.Sleep(2 * time.Millisecond) {
				for c := created.Load(); j < len(nodes) && c >= need(j); j++ {
					reached[j].Store(int64(time.Since(tStart)))
				}
			}
		}()
		go func() {
			nodesDone <- createPlanNodes(ctx, cs, nodes, func(i int) {
				for ctx.Err() == nil {
					podAt := time.Duration(reached[i].Load())
					if podAt >= 0 && (cfg.idealBatch <= 0 || time.Since(tStart) >= idealBatchClose(podAt, time.Duration(lastAt.Load()), cfg.idealBatch, idle)) {
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
			})
		}()
	}
	if err := createPods(ctx, cs, cfg.pods, &created); err != nil {
		b.Fatal(err)
	}
	tLastPod := time.Now()
	lastAt.Store(int64(tLastPod.Sub(tStart)))
	res.createPods = tLastPod.Sub(tStart)
	logf("%s: created %d pods in %s (%.0f/s)", label, cfg.pods, res.createPods.Round(time.Millisecond), float64(cfg.pods)/res.createPods.Seconds())
	if ideal {
		if err := <-nodesDone; err != nil {
			b.Fatal(err)
		}
		logf("IDEAL: created the %d nodes by %.1fs after the last pod", len(nodes), time.Since(tLastPod).Seconds())
	}

	until := time.Now().Add(max(cfg.waitRunning, 5*time.Minute))
	next := time.Now()
	for time.Now().Before(until) {
		s := w.state()
		if res.toAllBound < 0 && s.seen >= cfg.pods && s.bound == s.seen {
			res.toAllBound = w.lastPlacementEvent().Sub(tLastPod) // no nominations here: the last binding
		}
		if s.seen+s.deleted >= cfg.pods && s.running == s.seen {
			res.toAllRunning = w.lastRun().Sub(tLastPod)
			break
		}
		// kube-scheduler spreads pods in its own order, so the plan's nodes
		// may leave a few pods with no room; those stay pending for good
		// here. Once every pod was tried, every bound pod runs and nothing
		// was bound for 15s, the floor is the last of the others to run.
		if s.seen+s.deleted >= cfg.pods && s.tried == s.seen && s.running == s.bound &&
			s.bound+s.unschedulable == s.seen && time.Since(w.lastPlacementEvent()) > 15*time.Second {
			res.unplaced = s.seen - s.bound
			res.toAllRunning = w.lastRun().Sub(tLastPod)
			logf("%s: %d pods found no room on the plan's nodes in kube-scheduler's order; the floor is the others'", label, res.unplaced)
			break
		}
		if !time.Now().Before(next) {
			logf("%s [+%.0fs after the last pod] %s", label, time.Since(tLastPod).Seconds(), s)
			next = next.Add(10 * time.Second)
		}
		time.Sleep(250 * time.Millisecond)
	}
	s := w.state()
	self := procCPU(os.Getpid()) - selfCPU0
	line, used := componentCPU(comps, compCPU0)
	res.cpuAll = self + used
	logf("%s CPU used from the first pod create (%.1fs wall on %d cores): %s, this benchmark %.1fs; %.1fs in all",
		label, time.Since(tStart).Seconds(), runtime.NumCPU(), strings.Join(line, ", "), self.Seconds(), res.cpuAll.Seconds())
	if req, err := requestCounts(ctx, cs); err == nil && req0.all != nil {
		top, total := topRequests(req0.all, req.all, 12)
		logf("%s API requests from the first pod create: %.0f in all; most: %s", label, total, strings.Join(top, ", "))
	}
	logf("%s CONNECTIONS to kube-apiserver from the first pod create, most at once: %s", label, conns.report())
	logScheduler(label+" KUBE-SCHEDULER from the first pod create", sched0, schedPort)
	if ev, err := eventsBySource(ctx, cs); err == nil {
		logf("%s EVENTS stored by reporter and reason: %s", label, strings.Join(fmtEvents(ev, 12), ", "))
	}
	if s.deleted > 0 {
		logf("%s: %d pods deleted by others (evicted)", label, s.deleted)
	}
	logf("%s MEASURED: %d nodes; every pod bound %s and Running %s after the last pod was created (%s)",
		label, len(nodes), fmtRunning(res.toAllBound), fmtRunning(res.toAllRunning), s)
	failed = false
	return res
}

// createPlanNodes creates the nodes for kwok to run (its annotation selects
// them), with the plan's labels and resources and no taint. gate, when
// given, returns when node i may be created; the nodes are created in
// order.
func createPlanNodes(ctx context.Context, cs kubernetes.Interface, nodes []planNode, gate func(i int)) error {
	idx := make(chan int)
	errs := make(chan error, creators)
	go func() {
		defer close(idx)
		for i := range nodes {
			if gate != nil {
				gate(i)
			}
			select {
			case idx <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range creators {
		go func() {
			var first error
			for i := range idx {
				if first != nil {
					continue
				}
				n := nodes[i]
				node := &corev1.Node{
					ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels,
						Annotations: map[string]string{kwok.KWOKNodeAnnotation: kwok.KWOKNodeAnnotationValue}},
					Status: corev1.NodeStatus{Capacity: n.capacity, Allocatable: n.allocatable, NodeInfo: n.info},
				}
				if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					first = fmt.Errorf("creating node %s: %w", n.name, err)
				}
			}
			errs <- first
		}()
	}
	var first error
	for range creators {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// waitNodesReady polls until n nodes are Ready and carry no taint (the
// node lifecycle controller's not-ready taint goes once kwok reports Ready).
func waitNodesReady(ctx context.Context, cs kubernetes.Interface, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		ready := 0
		if err == nil {
			for _, node := range list.Items {
				if len(node.Spec.Taints) > 0 {
					continue
				}
				for _, c := range node.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			if ready >= n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d nodes Ready with no taint after %s (last list error: %v)", ready, n, timeout, err)
		}
		time.Sleep(time.Second)
	}
}

// fromFirstCreate is the time from the first pod create until every pod
// ran.
func (b baseline) fromFirstCreate() time.Duration { return b.createPods + b.toAllRunning }

// fromFirstCreate is the time from the first pod create until every pod
// ran, with nodewright.
func (r result) fromFirstCreate() time.Duration { return r.createPods + r.toAllRunning }

// ratio is a over b, 0 when b is not known.
func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return a.Seconds() / b.Seconds()
}

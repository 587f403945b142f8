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

// runBaseline starts a fresh local cluster of the same make, creates the
// plan's nodes and waits until kwok reports every one Ready with no taint,
// then creates the same pods as the run did, with no autoscaler, and
// measures from the last create until every pod runs: kube-scheduler,
// kube-apiserver and kwok's own time, which no autoscaler can beat.
func runBaseline(b *testing.B, cfg config, bin, kube string, run int, nodes []planNode) baseline {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := baseline{nodes: len(nodes), toAllBound: -1, toAllRunning: -1}
	name := fmt.Sprintf("scale-%d-%d-baseline", os.Getpid(), run)
	logf("BASELINE: starting local cluster %s: %d nodes of the plan, then %d pods, no autoscaler", name, len(nodes), cfg.pods)
	env, err := devenv.Up(ctx, devcluster.Options{Name: name, BinariesDir: kube, WorkDir: cfg.workDir, Ephemeral: true, HeartbeatFactor: cfg.heartbeat}, bin)
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
	tNodes := time.Now()
	if err := createPlanNodes(ctx, cs, nodes); err != nil {
		b.Fatal(err)
	}
	if err := waitNodesReady(ctx, cs, len(nodes), 10*time.Minute); err != nil {
		b.Fatal(err)
	}
	res.nodesReady = time.Since(tNodes)
	logf("BASELINE: %d nodes Ready with no taint %.1fs after the first create", len(nodes), res.nodesReady.Seconds())

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
	compCPU0 := map[string]time.Duration{}
	for n, p := range comps {
		compCPU0[n] = procCPU(p)
	}
	selfCPU0 := procCPU(os.Getpid())

	var created atomic.Int64
	tStart := time.Now()
	if err := createPods(ctx, cs, cfg.pods, &created); err != nil {
		b.Fatal(err)
	}
	tLastPod := time.Now()
	res.createPods = tLastPod.Sub(tStart)
	logf("BASELINE: created %d pods in %s (%.0f/s)", cfg.pods, res.createPods.Round(time.Millisecond), float64(cfg.pods)/res.createPods.Seconds())

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
			logf("BASELINE: %d pods found no room on the plan's nodes in kube-scheduler's order; the floor is the others'", res.unplaced)
			break
		}
		if !time.Now().Before(next) {
			logf("BASELINE [+%.0fs after the last pod] %s", time.Since(tLastPod).Seconds(), s)
			next = next.Add(10 * time.Second)
		}
		time.Sleep(250 * time.Millisecond)
	}
	s := w.state()
	self := procCPU(os.Getpid()) - selfCPU0
	line, used := componentCPU(comps, compCPU0)
	res.cpuAll = self + used
	logf("BASELINE CPU used from the first pod create (%.1fs wall on %d cores): %s, this benchmark %.1fs; %.1fs in all",
		time.Since(tStart).Seconds(), runtime.NumCPU(), strings.Join(line, ", "), self.Seconds(), res.cpuAll.Seconds())
	if req, err := requestCounts(ctx, cs); err == nil && req0.all != nil {
		top, total := topRequests(req0.all, req.all, 12)
		logf("BASELINE API requests from the first pod create: %.0f in all; most: %s", total, strings.Join(top, ", "))
	}
	if ev, err := eventsBySource(ctx, cs); err == nil {
		logf("BASELINE EVENTS stored by reporter and reason: %s", strings.Join(fmtEvents(ev, 12), ", "))
	}
	if s.deleted > 0 {
		logf("BASELINE: %d pods deleted by others (evicted)", s.deleted)
	}
	logf("BASELINE MEASURED: %d nodes; every pod bound %s and Running %s after the last pod was created (%s)",
		len(nodes), fmtRunning(res.toAllBound), fmtRunning(res.toAllRunning), s)
	failed = false
	return res
}

// createPlanNodes creates the nodes for kwok to run (its annotation selects
// them), with the plan's labels and resources and no taint.
func createPlanNodes(ctx context.Context, cs kubernetes.Interface, nodes []planNode) error {
	idx := make(chan int)
	errs := make(chan error, creators)
	go func() {
		defer close(idx)
		for i := range nodes {
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

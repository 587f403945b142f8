package scale

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/devcluster"
	"github.com/nodewright/nodewright/internal/devenv"
	"github.com/nodewright/nodewright/internal/kubebin"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/snapshot"
)

const (
	namespace = "scale"
	podLabel  = "nodewright.dev/scale-benchmark"
	// creators is how many goroutines create pods at once.
	creators = 64
)

// shapes are the pods' requests, in equal numbers.
var shapes = []struct{ cpu, mem string }{
	{"100m", "128Mi"}, {"250m", "256Mi"}, {"250m", "512Mi"}, {"500m", "512Mi"},
	{"500m", "1Gi"}, {"1", "1Gi"}, {"1", "2Gi"}, {"2", "4Gi"},
}

const nodePoolYAML = `
apiVersion: nodewright.dev/v1alpha1
kind: KWOKNodeClass
metadata:
  name: scale
spec:
  image: kwok-image-v1
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: scale
spec:
  template:
    spec:
      nodeClassRef:
        group: nodewright.dev
        kind: KWOKNodeClass
        name: scale
      requirements:
      - key: kubernetes.io/arch
        operator: In
        values: ["amd64", "arm64"]
      - key: karpenter.sh/capacity-type
        operator: In
        values: ["on-demand", "spot"]%s
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: Never
`

// nodePoolFor is the KWOKNodeClass and NodePool of a run.
func nodePoolFor(cfg config) string {
	extra := ""
	if cfg.minNodeCPU > 0 {
		extra = fmt.Sprintf(`
      - key: nodewright.dev/instance-cpu
        operator: Gt
        values: ["%d"]`, cfg.minNodeCPU-1)
	}
	return fmt.Sprintf(nodePoolYAML, extra)
}

// config is the benchmark's knobs, read from the environment.
type config struct {
	pods           int
	waitRunning    time.Duration
	timeout        time.Duration
	settle         time.Duration
	controllerArgs []string
	workDir        string
	keepLog        string
	pprofDir       string
	apiPprofDir    string
	nodeWaits      bool
	minNodeCPU     int
	heartbeat      int
	memLimit       string
	apiServerFlags []string
	// schedPprofDir, if set, is where kube-scheduler's goroutine dumps and
	// CPU profiles go (NODEWRIGHT_SCALE_SCHEDULER_PPROF).
	schedPprofDir string
	// extraSchedulerFlags are NODEWRIGHT_SCALE_SCHEDULER_FLAGS.
	extraSchedulerFlags []string
	// idealBatch, if positive, makes the ideal autoscaler wait as
	// Karpenter's batcher does (NODEWRIGHT_SCALE_IDEAL_BATCH; see
	// idealBatchClose).
	idealBatch time.Duration
}

// schedulerFlags are the extra kube-scheduler flags of the benchmark's
// clusters: NODEWRIGHT_SCALE_SCHEDULER_FLAGS, and with
// NODEWRIGHT_SCALE_SCHEDULER_PPROF /debug/pprof let through; otherwise
// none, kwokctl's defaults.
func (c config) schedulerFlags() []string {
	flags := slices.Clone(c.extraSchedulerFlags)
	if c.schedPprofDir != "" {
		flags = append(flags, schedulerPprofPaths)
	}
	return flags
}

func readConfig(b *testing.B) config {
	c := config{pods: 40000, timeout: 20 * time.Minute, settle: 15 * time.Second, heartbeat: 5, memLimit: "1200MiB"}
	if s := os.Getenv("NODEWRIGHT_SCALE_PODS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("NODEWRIGHT_SCALE_PODS=%q: want a positive number", s)
		}
		c.pods = n
	}
	c.waitRunning = defaultWaitRunning(c.pods)
	for _, d := range []struct {
		env string
		to  *time.Duration
	}{{"NODEWRIGHT_SCALE_WAIT_RUNNING", &c.waitRunning}, {"NODEWRIGHT_SCALE_TIMEOUT", &c.timeout}, {"NODEWRIGHT_SCALE_SETTLE", &c.settle}} {
		if s := os.Getenv(d.env); s != "" {
			v, err := time.ParseDuration(s)
			if err != nil {
				b.Fatalf("%s=%q: %v", d.env, s, err)
			}
			*d.to = v
		}
	}
	c.controllerArgs = strings.Fields(os.Getenv("NODEWRIGHT_SCALE_CONTROLLER_ARGS"))
	c.apiServerFlags = strings.Fields(os.Getenv("NODEWRIGHT_SCALE_APISERVER_FLAGS"))
	c.extraSchedulerFlags = strings.Fields(os.Getenv("NODEWRIGHT_SCALE_SCHEDULER_FLAGS"))
	c.workDir = os.Getenv("NODEWRIGHT_SCALE_WORKDIR")
	c.keepLog = os.Getenv("NODEWRIGHT_SCALE_KEEP_LOG")
	c.pprofDir = os.Getenv("NODEWRIGHT_SCALE_PPROF")
	c.apiPprofDir = os.Getenv("NODEWRIGHT_SCALE_APISERVER_PPROF")
	c.schedPprofDir = os.Getenv("NODEWRIGHT_SCALE_SCHEDULER_PPROF")
	c.nodeWaits = os.Getenv("NODEWRIGHT_SCALE_NODE_WAITS") == "1"
	if s, ok := os.LookupEnv("NODEWRIGHT_SCALE_GOMEMLIMIT"); ok {
		c.memLimit = s
	}
	if s := os.Getenv("NODEWRIGHT_SCALE_HEARTBEAT_FACTOR"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("NODEWRIGHT_SCALE_HEARTBEAT_FACTOR=%q: want a whole factor of at least 1", s)
		}
		c.heartbeat = n
	}
	if s := os.Getenv("NODEWRIGHT_SCALE_IDEAL_BATCH"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil || v <= 0 {
			b.Fatalf("NODEWRIGHT_SCALE_IDEAL_BATCH=%q: want a positive duration, such as 10s (Karpenter's BATCH_MAX_DURATION)", s)
		}
		c.idealBatch = v
	}
	if s := os.Getenv("NODEWRIGHT_SCALE_MIN_NODE_CPU"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			b.Fatalf("NODEWRIGHT_SCALE_MIN_NODE_CPU=%q: want a number of vCPUs", s)
		}
		c.minNodeCPU = n
	}
	return c
}

// defaultWaitRunning is how long a run waits, once every pod is placed, for
// every pod to run: 5 minutes a 10,000 pods, at least 5. kwok starts pods at
// 60 to 130 a second on two cores, so at 40,000 pods the baseline itself
// needs 5 minutes after its last create, and a run whose binding comes
// later more: a fixed 5 minutes ended one such run before its last pods
// ran, with every pod bound.
func defaultWaitRunning(pods int) time.Duration {
	return max(5*time.Minute, time.Duration(pods)*30*time.Millisecond)
}

// result is what one run measured. Durations count from the moment the last
// pod create returned.
type result struct {
	pods, evicted int
	// At the first moment every pod was bound or nominated ("placed").
	claimsAtPlaced, runningAtPlaced int
	createPods, schedTried          time.Duration
	toAllPlaced, toPlacedClaim      time.Duration
	rssAtPlacedMiB                  float64
	reacted                         int
	reactP50, reactP90, reactP99    time.Duration
	reactMax                        time.Duration
	placedN                         int
	placeP50, placeP90, placeP99    time.Duration
	placeMax                        time.Duration
	cpuAtPlaced                     time.Duration
	// cpuAll is the CPU every process of the run (the controller, the
	// cluster's components, this benchmark) used from the first create
	// until every pod ran.
	cpuAll time.Duration
	// At the end of the run.
	claims, emptyClaims              int
	toLastClaim                      time.Duration
	toAllRunning                     time.Duration // < 0: not reached
	peakRSSMiB                       float64
	controllerCPU                    time.Duration
	solves                           []solve
	metricSolveSum, metricSolveCount float64
	// plan is the nodes the run ended with; base the baseline run on them.
	plan []planNode
	base *baseline
	// ideal is the ideal reactive autoscaler's run on the same plan
	// (NODEWRIGHT_SCALE_IDEAL=1; see runBaseline).
	ideal *baseline
}

// BenchmarkScale40k creates 40,000 (NODEWRIGHT_SCALE_PODS) pending pods on a
// fresh local cluster and measures how long after the last pod was created the
// controller created its last NodeClaim, and its peak memory. See the package
// documentation.
func BenchmarkScale40k(b *testing.B) {
	ctrllog.SetLogger(logr.Discard()) // the benchmark's own caches log nothing worth reading
	cfg := readConfig(b)
	pkg := "./cmd/nodewright"
	if cfg.pprofDir != "" {
		pkg = "./test/scale/profiled"
	}
	bin := buildController(b, pkg)
	kube, err := kubebin.Binaries()
	if err != nil {
		b.Fatal(err)
	}
	var results []result
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := runOnce(b, cfg, bin, kube, i)
		if baselineEnabled() {
			if r.toAllRunning < 0 {
				b.Fatalf("no baseline: not every pod ran in the autoscaler's run, so its overhead over the floor is not known")
			}
			base := runBaseline(b, cfg, bin, kube, i, r.plan, false)
			if base.toAllRunning < 0 {
				b.Fatalf("the baseline never had every pod Running")
			}
			r.base = &base
			logf("OVERHEAD: every pod Running +%.1fs after the last pod with nodewright, +%.1fs with the %d nodes created beforehand and no autoscaler: ratio %.3f",
				r.toAllRunning.Seconds(), base.toAllRunning.Seconds(), base.nodes, ratio(r.toAllRunning, base.toAllRunning))
			logf("OVERHEAD from the first create: %.1fs against %.1fs, ratio %.3f; CPU used by every process %.1fs against %.1fs, ratio %.3f",
				r.fromFirstCreate().Seconds(), base.fromFirstCreate().Seconds(),
				ratio(r.fromFirstCreate(), base.fromFirstCreate()),
				r.cpuAll.Seconds(), base.cpuAll.Seconds(), ratio(r.cpuAll, base.cpuAll))
			if idealEnabled() {
				ideal := runBaseline(b, cfg, bin, kube, i, r.plan, true)
				if ideal.toAllRunning < 0 {
					b.Fatalf("the ideal autoscaler's run never had every pod Running")
				}
				r.ideal = &ideal
				logf("IDEAL after the last create: %.1fs, %.3f of the baseline's; from the first create: %.1fs, %.3f of the baseline's and nodewright's %.3f of it; CPU used by every process %.1fs, %.3f of the baseline's and nodewright's %.3f of it",
					ideal.toAllRunning.Seconds(), ratio(ideal.toAllRunning, base.toAllRunning),
					ideal.fromFirstCreate().Seconds(), ratio(ideal.fromFirstCreate(), base.fromFirstCreate()), ratio(r.fromFirstCreate(), ideal.fromFirstCreate()),
					ideal.cpuAll.Seconds(), ratio(ideal.cpuAll, base.cpuAll), ratio(r.cpuAll, ideal.cpuAll))
			}
		}
		results = append(results, r)
	}
	b.StopTimer()
	report(b, results)
}

// buildController builds the nodewright binary the controller runs from.
func buildController(b *testing.B, pkg string) string {
	root, err := kubebin.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "nodewright")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building nodewright: %v\n%s", err, msg)
	}
	logf("built %s in %s", out, time.Since(start).Round(time.Millisecond))
	return out
}

func runOnce(b *testing.B, cfg config, bin, kube string, run int) result {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	name := fmt.Sprintf("scale-%d-%d", os.Getpid(), run)
	logf("starting local cluster %s (%d pods to come)", name, cfg.pods)
	env, err := devenv.Up(ctx, devcluster.Options{Name: name, BinariesDir: kube, WorkDir: cfg.workDir, Ephemeral: true, HeartbeatFactor: cfg.heartbeat, APIServerFlags: cfg.apiServerFlags, SchedulerFlags: cfg.schedulerFlags()}, bin)
	if err != nil {
		b.Fatal(err)
	}
	failed := true
	defer func() {
		if failed {
			dumpTail(env.ControllerLog(), 40)
			var buf bytes.Buffer
			env.Cluster.DumpLogs(&buf, 20)
			logf("%s", buf.String())
		}
		if cfg.keepLog != "" {
			if data, err := os.ReadFile(env.ControllerLog()); err == nil {
				_ = os.WriteFile(cfg.keepLog, data, 0o644)
			}
		}
		if err := env.Down(context.Background()); err != nil {
			b.Errorf("tearing down: %v", err)
		}
	}()

	metricsPort, probePort := freePort(b), freePort(b)
	env.ControllerArgs = append([]string{
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probePort),
		"--log-level=info",
	}, cfg.controllerArgs...)
	// No --kube-api-qps or --kube-api-burst: the figures are the shipped
	// defaults' (config/deploy and the chart set none either).
	pprofPort := 0
	if cfg.pprofDir != "" {
		pprofPort = freePort(b)
		env.ControllerArgs = append(env.ControllerArgs, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort))
		if err := os.MkdirAll(cfg.pprofDir, 0o755); err != nil {
			b.Fatal(err)
		}
		if data, err := os.ReadFile(bin); err == nil {
			_ = os.WriteFile(filepath.Join(cfg.pprofDir, "controller.bin"), data, 0o755)
		}
	}
	if cfg.memLimit != "" {
		env.ControllerEnv = []string{"GOMEMLIMIT=" + cfg.memLimit}
	}
	logf("controller args: %s; env: %s", strings.Join(env.ControllerArgs, " "), strings.Join(env.ControllerEnv, " "))
	if len(cfg.apiServerFlags) > 0 {
		logf("NOT THE DEFAULT CLUSTER: kube-apiserver runs with %s, here and in the baseline and ideal runs", strings.Join(cfg.apiServerFlags, " "))
	}
	if len(cfg.extraSchedulerFlags) > 0 {
		logf("NOT THE DEFAULT CLUSTER: kube-scheduler runs with %s, here and in the baseline and ideal runs", strings.Join(cfg.extraSchedulerFlags, " "))
	}

	rc := rest.CopyConfig(env.Config)
	rc.QPS, rc.Burst = 2000, 4000
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	crc := rest.CopyConfig(env.Config)
	crc.QPS, crc.Burst = 500, 1000
	cl, err := client.New(crc, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	if err := applyYAML(ctx, cl, nodePoolFor(cfg)); err != nil {
		b.Fatal(err)
	}
	if err := createNamespace(ctx, cs); err != nil {
		b.Fatal(err)
	}

	if err := env.StartController(); err != nil {
		b.Fatal(err)
	}
	pid, err := controllerPID(env)
	if err != nil {
		b.Fatal(err)
	}
	if err := waitControllerReady(ctx, cs, probePort, env); err != nil {
		b.Fatal(err)
	}
	logf("controller pid %d ready and leading; RSS %.0f MiB", pid, procMem(pid).rssMiB)

	// The watches get connections of their own: on the creators' HTTP/2
	// connection, pod events lagged claim events by seconds.
	wcfg := rest.CopyConfig(rc)
	wcfg.Dial = (&net.Dialer{}).DialContext // an uncached transport
	wcs, err := kubernetes.NewForConfig(wcfg)
	if err != nil {
		b.Fatal(err)
	}
	ccfg := rest.CopyConfig(crc)
	ccfg.Dial = (&net.Dialer{}).DialContext
	w := newWatcher(cfg.pods)
	if err := w.start(ctx, wcs, ccfg); err != nil {
		b.Fatal(err)
	}
	req0, err := requestCounts(ctx, cs)
	if err != nil {
		logf("%v", err)
	}
	cpu0, selfCPU0 := procCPU(pid), procCPU(os.Getpid())
	comps := componentPIDs(env)
	compCPU0 := cpuReadings(comps)
	sched0, schedPort := schedulerReading(comps)

	// Progress lines until the run ends.
	var createdCount atomic.Int64
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	progressWG.Add(1)
	t0 := time.Now()
	go func() {
		defer progressWG.Done()
		every := 5 * time.Second
		if cfg.pods > 10000 {
			every = 10 * time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		// The heap in use comes from the controller's metrics endpoint,
		// and a scrape makes the controller compute every metric (60 ms of
		// its CPU at 10,000 pods): at most every 30 s, as Prometheus
		// scrapes, not at every progress line.
		heap, lastScrape := 0.0, time.Time{}
		// Each line also says who used the CPU since the last one: with
		// both cores busy, a stall in the creates shows which process
		// took the time.
		watched := maps.Clone(comps)
		watched["controller"] = pid
		lastCPU := cpuReadings(watched)
		for {
			select {
			case <-progressDone:
				return
			case <-t.C:
				s := w.state()
				m := procMem(pid)
				if time.Since(lastScrape) >= 30*time.Second {
					heap, lastScrape = scrapeMetric(metricsPort, "go_memstats_heap_inuse_bytes"), time.Now()
				}
				logf("[%6.1fs] created %d | %s | controller RSS %.0f MiB (peak %.0f, heap in use %.0f as last scraped) | CPU since the last line: %s",
					time.Since(t0).Seconds(), createdCount.Load(), s, m.rssMiB, m.hwmMiB, heap/(1<<20), cpuSince(watched, lastCPU))
				if cfg.nodeWaits {
					w, err := nodeWaits(ctx, cs)
					if err != nil {
						w = err.Error()
					}
					logf("[%6.1fs] NODES %s", time.Since(t0).Seconds(), w)
				}
			}
		}
	}()
	defer func() { close(progressDone); progressWG.Wait() }()

	if pprofPort != 0 {
		progressWG.Add(1)
		go func() {
			defer progressWG.Done()
			profileLoop(pprofPort, cfg.pprofDir, progressDone)
		}()
	}
	if cfg.apiPprofDir != "" {
		defer inBackground(func(done <-chan struct{}) {
			apiserverProfileLoop(ctx, cs, cfg.apiPprofDir, fmt.Sprintf("run%d", run), done)
		})()
	}
	if cfg.schedPprofDir != "" && schedPort != 0 {
		defer inBackground(func(done <-chan struct{}) {
			schedulerProfileLoop(ctx, schedPort, cfg.schedPprofDir, fmt.Sprintf("run%d", run), done)
		})()
	}

	if err := checkClusterFlags(comps, cfg.apiServerFlags, cfg.extraSchedulerFlags); err != nil {
		b.Fatal(err)
	}
	conns := connections(env.Config.Host, comps, pid)
	defer conns.close()

	// Create the pods.
	b.StartTimer()
	tStart := time.Now()
	if err := createPods(ctx, cs, cfg.pods, &createdCount); err != nil {
		b.Fatal(err)
	}
	tLastPod := time.Now()
	logf("created %d pods in %s (%.0f/s)", cfg.pods, tLastPod.Sub(tStart).Round(time.Millisecond),
		float64(cfg.pods)/tLastPod.Sub(tStart).Seconds())

	// logCPU returns the CPU every process of the run used, in all.
	logCPU := func(what string) time.Duration {
		ctrl, self := procCPU(pid)-cpu0, procCPU(os.Getpid())-selfCPU0
		line, used := componentCPU(comps, compCPU0)
		all := ctrl + self + used
		logf("CPU used %s (%.1fs wall on %d cores): controller %.1fs, %s, this benchmark %.1fs; %.1fs in all", what, time.Since(tStart).Seconds(), runtime.NumCPU(),
			ctrl.Seconds(), strings.Join(line, ", "), self.Seconds(), all.Seconds())
		if req, err := requestCounts(ctx, cs); err == nil && req0.all != nil {
			top, total := topRequests(req0.all, req.all, 20)
			conflicts, refused := topRequests(req0.conflicts, req.conflicts, 5)
			logf("API requests %s: %.0f in all; most: %s; refused as conflicts (409): %.0f, most: %s", what, total, strings.Join(top, ", "),
				refused, strings.Join(conflicts, ", "))
		}
		logScheduler("KUBE-SCHEDULER "+what, sched0, schedPort)
		logf("CONNECTIONS to kube-apiserver %s, most at once: %s", what, conns.report())
		return all
	}

	// Phase 1: until every pod is bound or nominated to a NodeClaim and no
	// NodeClaim came for the settle window.
	deadline := time.Now().Add(cfg.timeout)
	var tCovered, placedAt time.Time
	runningAtCover := 0
	for {
		s := w.state()
		if s.uncovered == 0 && s.seen+s.deleted >= cfg.pods {
			if tCovered.IsZero() {
				// The event that completed the placement, not later bindings.
				tCovered, placedAt, runningAtCover = time.Now(), w.lastPlacementEvent(), s.running
				logf("every pod bound or nominated %.1fs after the last pod was created; %d NodeClaims; settling %s",
					placedAt.Sub(tLastPod).Seconds(), s.claims, cfg.settle)
			}
			if time.Since(w.lastClaimAdd()) >= cfg.settle && time.Since(tCovered) >= cfg.settle {
				break
			}
		} else if !tCovered.IsZero() {
			logf("%d pods neither bound nor nominated again after all were", s.uncovered)
			tCovered = time.Time{}
		}
		if time.Now().After(deadline) {
			// What was measured still tells where the time went.
			logCPU("until the timeout")
			m := procMem(pid)
			logf("TIMED OUT %s after the last pod was created: %s; last NodeClaim +%.1fs after the last pod; controller peak RSS %.0f MiB",
				cfg.timeout, s, w.lastClaimAdd().Sub(tLastPod).Seconds(), m.hwmMiB)
			parseSolves(env.ControllerLog(), tLastPod)
			b.Fatalf("not every pod bound or nominated %s after creation: %s", cfg.timeout, s)
		}
		time.Sleep(250 * time.Millisecond)
	}
	s := w.state()
	res := result{
		pods:            cfg.pods,
		claimsAtPlaced:  s.claims,
		runningAtPlaced: runningAtCover,
		createPods:      tLastPod.Sub(tStart),
		schedTried:      w.allTried().Sub(tLastPod),
		toPlacedClaim:   w.lastClaimAdd().Sub(tLastPod),
		toAllPlaced:     placedAt.Sub(tLastPod),
		toAllRunning:    -1,
		rssAtPlacedMiB:  procMem(pid).hwmMiB,
		cpuAtPlaced:     procCPU(pid) - cpu0,
	}
	res.reacted, res.reactP50, res.reactP90, res.reactP99, res.reactMax = w.reaction()
	res.placedN, res.placeP50, res.placeP90, res.placeP99, res.placeMax = w.placement()
	logf("PLACEMENT LATENCY (pod created -> nominated or bound, %d pods): p50 %.1fs, p90 %.1fs, p99 %.1fs, max %.1fs",
		res.placedN, res.placeP50.Seconds(), res.placeP90.Seconds(), res.placeP99.Seconds(), res.placeMax.Seconds())
	logf("REACTION (pod marked Unschedulable -> nominated to a NodeClaim, %d pods): p50 %.1fs, p90 %.1fs, p99 %.1fs, max %.1fs",
		res.reacted, res.reactP50.Seconds(), res.reactP90.Seconds(), res.reactP99.Seconds(), res.reactMax.Seconds())
	logf("PLACED: last pod created at +%.1fs; every pod bound or nominated +%.2fs after it, the last NodeClaim so far +%.2fs; kube-scheduler had tried every pod at +%.2fs; %d NodeClaims; %d pods Running; controller peak RSS %.0f MiB, CPU %.1fs",
		res.createPods.Seconds(), res.toAllPlaced.Seconds(), res.toPlacedClaim.Seconds(), res.schedTried.Seconds(),
		res.claimsAtPlaced, res.runningAtPlaced, res.rssAtPlacedMiB, res.cpuAtPlaced.Seconds())
	logCPU("from pod creation to all placed")

	// Phase 2: until every pod runs. Pods kube-scheduler put elsewhere than
	// planned may still need NodeClaims, once their nominations lapse.
	if cfg.waitRunning > 0 {
		logf("waiting up to %s for every pod to run", cfg.waitRunning)
		until := time.Now().Add(cfg.waitRunning)
		for time.Now().Before(until) {
			if s := w.state(); s.seen+s.deleted >= cfg.pods && s.running == s.seen {
				res.toAllRunning = w.lastRun().Sub(tLastPod)
				logf("every pod Running %.1fs after the last pod was created; %d NodeClaims", res.toAllRunning.Seconds(), s.claims)
				break
			}
			time.Sleep(time.Second)
		}
		if res.toAllRunning < 0 {
			logf("not every pod Running after %s: %s", cfg.waitRunning, w.state())
		}
		res.cpuAll = logCPU("from pod creation to the end")
	}
	logf("NODECLAIM TO USABLE NODE: %s", strings.Join(w.claimPhases(), "; "))
	b.StopTimer()
	s = w.state()
	res.claims = s.claims
	res.emptyClaims = s.empty
	res.evicted = s.deleted
	res.toLastClaim = w.lastClaimAdd().Sub(tLastPod)
	res.peakRSSMiB = procMem(pid).hwmMiB
	res.controllerCPU = procCPU(pid) - cpu0
	res.metricSolveSum = scrapeMetric(metricsPort, `karpenter_scheduler_scheduling_duration_seconds_sum{controller="provisioner"}`)
	res.metricSolveCount = scrapeMetric(metricsPort, `karpenter_scheduler_scheduling_duration_seconds_count{controller="provisioner"}`)
	logf("CONTROLLER WRITES by loop, kind, verb and result: %s", strings.Join(controllerWrites(metricsPort), ", "))
	if ev, err := eventsBySource(ctx, cs); err == nil {
		logf("EVENTS stored by reporter and reason: %s", strings.Join(fmtEvents(ev, 12), ", "))
	} else {
		logf("EVENTS: %v", err)
	}
	logf("MEASURED: last NodeClaim +%.2fs after the last pod was created (%d NodeClaims, %d of them after every pod was first bound or nominated, %d with no pod at the end); all running: %s; %d pods deleted by others (evicted); controller peak RSS %.0f MiB, CPU %.1fs",
		res.toLastClaim.Seconds(), res.claims, res.claims-res.claimsAtPlaced, res.emptyClaims, fmtRunning(res.toAllRunning), res.evicted, res.peakRSSMiB, res.controllerCPU.Seconds())

	if !env.ControllerRunning() {
		b.Fatal("the controller exited during the run")
	}
	res.solves = parseSolves(env.ControllerLog(), tLastPod)
	if baselineEnabled() {
		if res.plan, err = planNodes(ctx, cs); err != nil {
			b.Fatal(err)
		}
	}
	failed = false
	return res
}

// report reports the metrics, averaged over runs.
func report(b *testing.B, results []result) {
	if len(results) == 0 {
		return
	}
	avg := func(f func(r result) float64) float64 {
		sum := 0.0
		for _, r := range results {
			sum += f(r)
		}
		return sum / float64(len(results))
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(avg(func(r result) float64 { return float64(r.pods) }), "pods")
	b.ReportMetric(avg(func(r result) float64 { return r.createPods.Seconds() }), "s-create-pods")
	b.ReportMetric(avg(func(r result) float64 { return r.schedTried.Seconds() }), "s-sched-tried")
	b.ReportMetric(avg(func(r result) float64 { return r.toAllPlaced.Seconds() }), "s-to-all-placed")
	b.ReportMetric(avg(func(r result) float64 { return r.placeP50.Seconds() }), "s-place-p50")
	b.ReportMetric(avg(func(r result) float64 { return r.placeP99.Seconds() }), "s-place-p99")
	b.ReportMetric(avg(func(r result) float64 { return r.placeMax.Seconds() }), "s-place-max")
	b.ReportMetric(avg(func(r result) float64 { return r.reactP50.Seconds() }), "s-react-p50")
	b.ReportMetric(avg(func(r result) float64 { return r.reactP99.Seconds() }), "s-react-p99")
	b.ReportMetric(avg(func(r result) float64 { return r.reactMax.Seconds() }), "s-react-max")
	b.ReportMetric(avg(func(r result) float64 { return float64(r.claimsAtPlaced) }), "nodeclaims-at-placed")
	b.ReportMetric(avg(func(r result) float64 { return float64(r.runningAtPlaced) }), "running-at-placed")
	b.ReportMetric(avg(func(r result) float64 { return r.rssAtPlacedMiB }), "peak-rss-MiB-at-placed")
	b.ReportMetric(avg(func(r result) float64 { return r.toLastClaim.Seconds() }), "s-to-last-nodeclaim")
	b.ReportMetric(avg(func(r result) float64 { return float64(r.claims) }), "nodeclaims")
	b.ReportMetric(avg(func(r result) float64 { return float64(r.emptyClaims) }), "empty-nodeclaims")
	b.ReportMetric(avg(func(r result) float64 { return float64(r.evicted) }), "evicted-pods")
	b.ReportMetric(avg(func(r result) float64 { return r.peakRSSMiB }), "peak-rss-MiB")
	b.ReportMetric(avg(func(r result) float64 { return r.controllerCPU.Seconds() }), "ctrl-cpu-s")
	b.ReportMetric(avg(func(r result) float64 { return r.metricSolveCount }), "solves")
	b.ReportMetric(avg(func(r result) float64 {
		if r.metricSolveCount == 0 {
			return 0
		}
		return r.metricSolveSum / r.metricSolveCount
	}), "s/solve")
	b.ReportMetric(avg(func(r result) float64 {
		m := 0.0
		for _, s := range r.solves {
			m = math.Max(m, s.duration.Seconds())
		}
		return m
	}), "max-s/solve")
	allRan := true
	for _, r := range results {
		allRan = allRan && r.toAllRunning >= 0
	}
	if allRan {
		b.ReportMetric(avg(func(r result) float64 { return r.toAllRunning.Seconds() }), "s-to-all-running")
	}
	if results[0].base != nil {
		b.ReportMetric(avg(func(r result) float64 { return float64(r.base.nodes) }), "baseline-nodes")
		b.ReportMetric(avg(func(r result) float64 { return r.base.createPods.Seconds() }), "baseline-s-create-pods")
		b.ReportMetric(avg(func(r result) float64 { return r.base.toAllBound.Seconds() }), "baseline-s-to-all-bound")
		b.ReportMetric(avg(func(r result) float64 { return r.base.toAllRunning.Seconds() }), "baseline-s-to-all-running")
		b.ReportMetric(avg(func(r result) float64 { return float64(r.base.unplaced) }), "baseline-unplaced-pods")
		b.ReportMetric(avg(func(r result) float64 { return ratio(r.toAllRunning, r.base.toAllRunning) }), "overhead-ratio")
		// From the first pod created: the baseline's creates compete with
		// its bindings and take longer, which the ratio above leaves out.
		b.ReportMetric(avg(func(r result) float64 { return r.fromFirstCreate().Seconds() }), "s-first-create-to-all-running")
		b.ReportMetric(avg(func(r result) float64 { return r.base.fromFirstCreate().Seconds() }), "baseline-s-first-create-to-all-running")
		b.ReportMetric(avg(func(r result) float64 {
			return ratio(r.fromFirstCreate(), r.base.fromFirstCreate())
		}), "overhead-ratio-from-first-create")
		// Both saturate the machine's cores, so the time from the first
		// create follows the CPU each spent: this ratio says how much of
		// the one above is work added, not waiting.
		if results[0].cpuAll > 0 && results[0].base.cpuAll > 0 {
			b.ReportMetric(avg(func(r result) float64 { return r.cpuAll.Seconds() }), "cpu-s")
			b.ReportMetric(avg(func(r result) float64 { return r.base.cpuAll.Seconds() }), "baseline-cpu-s")
			b.ReportMetric(avg(func(r result) float64 { return ratio(r.cpuAll, r.base.cpuAll) }), "cpu-ratio")
		}
	}
	if results[0].ideal != nil {
		// The ideal reactive autoscaler over the baseline is what reacting
		// costs, whoever reacts; nodewright over the ideal is its own part.
		b.ReportMetric(avg(func(r result) float64 { return ratio(r.ideal.toAllRunning, r.base.toAllRunning) }), "ideal-overhead-ratio")
		b.ReportMetric(avg(func(r result) float64 { return r.ideal.fromFirstCreate().Seconds() }), "ideal-s-first-create-to-all-running")
		b.ReportMetric(avg(func(r result) float64 { return r.ideal.cpuAll.Seconds() }), "ideal-cpu-s")
		b.ReportMetric(avg(func(r result) float64 { return ratio(r.ideal.fromFirstCreate(), r.base.fromFirstCreate()) }), "ideal-ratio-from-first-create")
		b.ReportMetric(avg(func(r result) float64 { return ratio(r.ideal.cpuAll, r.base.cpuAll) }), "ideal-cpu-ratio")
		b.ReportMetric(avg(func(r result) float64 { return ratio(r.fromFirstCreate(), r.ideal.fromFirstCreate()) }), "over-ideal-ratio-from-first-create")
		b.ReportMetric(avg(func(r result) float64 { return ratio(r.cpuAll, r.ideal.cpuAll) }), "over-ideal-cpu-ratio")
	}
}

// createPods creates n bare pods of the shapes with many goroutines, retrying
// failed creates, and returns once the last create returned.
func createPods(ctx context.Context, cs kubernetes.Interface, n int, created *atomic.Int64) error {
	idx := make(chan int, creators)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				if err := createPod(ctx, cs, i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					continue
				}
				created.Add(1)
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		idx <- i
	}
	close(idx)
	wg.Wait()
	return firstErr
}

func createPod(ctx context.Context, cs kubernetes.Interface, i int) error {
	// Shapes interleave, as when several Deployments scale up at once.
	shape := i % len(shapes)
	sh := shapes[shape]
	zero := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("scale-%d-%05d", shape, i),
			Namespace: namespace,
			Labels:    map[string]string{podLabel: "true", "app": fmt.Sprintf("scale-%d", shape)},
		},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse(sh.cpu),
					corev1.ResourceMemory: resource.MustParse(sh.mem),
				}},
			}},
		},
	}
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		_, err = cs.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(time.Duration(100*(attempt+1)) * time.Millisecond)
	}
	return fmt.Errorf("creating pod %s: %w", pod.Name, err)
}

func createNamespace(ctx context.Context, cs kubernetes.Interface) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	// The ServiceAccount admission plugin refuses pods until
	// kube-controller-manager made the namespace's default ServiceAccount.
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := cs.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no default ServiceAccount in %s: %w", namespace, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func applyYAML(ctx context.Context, c client.Client, docs string) error {
	for _, doc := range strings.Split(docs, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return err
		}
		if len(u.Object) == 0 {
			continue
		}
		// Discovery may not list the CRDs installed a moment ago yet.
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := c.Create(ctx, u)
			if err == nil {
				break
			}
			if !meta.IsNoMatchError(err) && !strings.Contains(err.Error(), "no matches for") || time.Now().After(deadline) {
				return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	return nil
}

// waitControllerReady waits until the controller's caches synced and it holds
// the leader lease, so the clock starts on a controller ready to work.
func waitControllerReady(ctx context.Context, cs kubernetes.Interface, probePort int, env *devenv.Env) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if !env.ControllerRunning() {
			return errors.New("the controller exited while starting")
		}
		ready := false
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)); err == nil {
			ready = resp.StatusCode == http.StatusOK
			resp.Body.Close()
		}
		if ready {
			l, err := cs.CoordinationV1().Leases("nodewright").Get(ctx, "nodewright-leader", metav1.GetOptions{})
			if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("the controller was not ready and leading after 2m")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// watcher follows the benchmark's pods and the NodeClaims, recording when
// this process received each change.
type watcher struct {
	want int

	mu   sync.Mutex
	pods map[types.UID]podState
	// triedAt is when kube-scheduler's first verdict on each pod arrived.
	triedAt    map[types.UID]time.Time
	lastTried  time.Time
	claims     map[string]*claimState
	nominated  map[types.UID]int // how many live claims nominate each pod
	lastAdd    time.Time         // receipt of the latest NodeClaim
	lastPlaced time.Time         // receipt of the latest new claim, nomination change or binding
	deleted    int               // pods deleted (by the taint manager, say)
	// unschedAt is when each pod was first seen marked Unschedulable while
	// not nominated; nominatedAt when a NodeClaim first nominated it.
	unschedAt, nominatedAt map[types.UID]time.Time
	// seenAt is when each pod's creation arrived; placedAt when it was first
	// nominated to a NodeClaim or bound, whichever came first.
	seenAt, placedAt map[types.UID]time.Time
	// boundAt is when each pod's binding arrived.
	boundAt map[types.UID]time.Time
	// lastRunning is when the latest pod's move to Running arrived.
	lastRunning time.Time
}

type podState struct {
	node                          string
	bound, running, unschedulable bool
}

type claimState struct {
	nominations                    []types.UID
	launched, registered, initDone bool
	// When this process saw it created, and each condition first True.
	addedAt, launchedAt, registeredAt, initAt time.Time
}

func newWatcher(want int) *watcher {
	return &watcher{want: want, pods: map[types.UID]podState{}, triedAt: map[types.UID]time.Time{},
		claims: map[string]*claimState{}, nominated: map[types.UID]int{},
		unschedAt: map[types.UID]time.Time{}, nominatedAt: map[types.UID]time.Time{},
		seenAt: map[types.UID]time.Time{}, placedAt: map[types.UID]time.Time{}, boundAt: map[types.UID]time.Time{}}
}

// slimPod keeps only what the watcher reads, so 40,000 pods cost little.
func slimPod(o any) (any, error) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return o, nil
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID,
			ResourceVersion: p.ResourceVersion, CreationTimestamp: p.CreationTimestamp},
		Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			out.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status, Reason: c.Reason}}
		}
	}
	return out, nil
}

func (w *watcher) start(ctx context.Context, cs kubernetes.Interface, cfg *rest.Config) error {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = podLabel + "=true" }),
		informers.WithTransform(slimPod))
	podInf := f.Core().V1().Pods().Informer()
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.onPod(o) },
		UpdateFunc: func(_, o any) { w.onPod(o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				w.mu.Lock()
				if _, ok := w.pods[p.UID]; ok {
					delete(w.pods, p.UID)
					w.deleted++
				}
				w.mu.Unlock()
			}
		},
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())

	cc, err := ctrlcache.New(cfg, ctrlcache.Options{Scheme: operator.Scheme(), DefaultTransform: ctrlcache.TransformStripManagedFields()})
	if err != nil {
		return err
	}
	claimInf, err := cc.GetInformer(ctx, &karpv1.NodeClaim{})
	if err != nil {
		return err
	}
	if _, err := claimInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.onClaim(o, true) },
		UpdateFunc: func(_, o any) { w.onClaim(o, false) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if nc, ok := o.(*karpv1.NodeClaim); ok {
				w.mu.Lock()
				if old := w.claims[nc.Name]; old != nil {
					w.setNominations(old, nil)
				}
				delete(w.claims, nc.Name)
				w.mu.Unlock()
			}
		},
	}); err != nil {
		return err
	}
	go func() { _ = cc.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), podInf.HasSynced) || !cc.WaitForCacheSync(syncCtx) {
		return errors.New("the benchmark's informers did not sync")
	}
	return nil
}

func (w *watcher) onPod(o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	s := podState{node: p.Spec.NodeName, bound: p.Spec.NodeName != "", running: p.Status.Phase == corev1.PodRunning}
	tried := s.bound
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			tried = true
			s.unschedulable = c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.seenAt[p.UID]; !ok {
		w.seenAt[p.UID] = now
	}
	if s.bound && !w.pods[p.UID].bound {
		if _, ok := w.boundAt[p.UID]; !ok {
			w.boundAt[p.UID] = now
		}
		w.lastPlaced = now
		if _, ok := w.placedAt[p.UID]; !ok {
			w.placedAt[p.UID] = now
		}
	}
	if s.running && !w.pods[p.UID].running {
		w.lastRunning = now
	}
	w.pods[p.UID] = s
	if s.unschedulable && !s.bound && w.nominated[p.UID] == 0 {
		if _, ok := w.unschedAt[p.UID]; !ok {
			w.unschedAt[p.UID] = now
		}
	}
	if tried {
		if _, ok := w.triedAt[p.UID]; !ok {
			w.triedAt[p.UID] = now
			w.lastTried = now
		}
	}
}

func (w *watcher) onClaim(o any, added bool) {
	nc, ok := o.(*karpv1.NodeClaim)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.claims[nc.Name]
	if st == nil {
		st = &claimState{}
		w.claims[nc.Name] = st
		if added {
			w.lastAdd = now
			st.addedAt = now
		}
	}
	noms := snapshot.Nominations(nc.Annotations[snapshot.NominatedPodsAnnotation])
	if nc.DeletionTimestamp != nil {
		noms = nil
	}
	if !sameUIDs(st.nominations, noms) {
		w.setNominations(st, noms)
		w.lastPlaced = now
	}
	st.launched = meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeLaunched)
	st.registered = meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeRegistered)
	st.initDone = meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
	for _, t := range []struct {
		on bool
		at *time.Time
	}{{st.launched, &st.launchedAt}, {st.registered, &st.registeredAt}, {st.initDone, &st.initAt}} {
		if t.on && t.at.IsZero() {
			*t.at = now
		}
	}
}

// claimPhases is, over the NodeClaims seen created, how long each took from
// its creation to Launched, from Launched to Registered, from Registered to
// Initialized, from Initialized to the first pod bound to its node (kwok
// names the node after the claim), and from creation to that first pod:
// the time from a NodeClaim to a usable node.
func (w *watcher) claimPhases() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	firstBound := map[string]time.Time{}
	for uid, p := range w.pods {
		if at, ok := w.boundAt[uid]; ok && p.bound {
			if f, ok := firstBound[p.node]; !ok || at.Before(f) {
				firstBound[p.node] = at
			}
		}
	}
	phases := []struct {
		name string
		from func(c *claimState) time.Time
		to   func(c *claimState, name string) time.Time
	}{
		{"created->launched", func(c *claimState) time.Time { return c.addedAt }, func(c *claimState, _ string) time.Time { return c.launchedAt }},
		{"launched->registered", func(c *claimState) time.Time { return c.launchedAt }, func(c *claimState, _ string) time.Time { return c.registeredAt }},
		{"registered->initialized", func(c *claimState) time.Time { return c.registeredAt }, func(c *claimState, _ string) time.Time { return c.initAt }},
		{"initialized->first pod bound", func(c *claimState) time.Time { return c.initAt }, func(_ *claimState, n string) time.Time { return firstBound[n] }},
		{"created->first pod bound", func(c *claimState) time.Time { return c.addedAt }, func(_ *claimState, n string) time.Time { return firstBound[n] }},
	}
	var out []string
	for _, ph := range phases {
		var ds []time.Duration
		for name, c := range w.claims {
			from, to := ph.from(c), ph.to(c, name)
			if !from.IsZero() && !to.IsZero() {
				ds = append(ds, max(0, to.Sub(from)))
			}
		}
		n, p50, p90, _, worst := quantiles(ds)
		out = append(out, fmt.Sprintf("%s p50 %.2fs p90 %.2fs max %.2fs (%d)", ph.name, p50.Seconds(), p90.Seconds(), worst.Seconds(), n))
	}
	return out
}

func (w *watcher) setNominations(st *claimState, noms []types.UID) {
	for _, u := range st.nominations {
		if w.nominated[u]--; w.nominated[u] <= 0 {
			delete(w.nominated, u)
		}
	}
	now := time.Now()
	for _, u := range noms {
		w.nominated[u]++
		if _, ok := w.nominatedAt[u]; !ok {
			w.nominatedAt[u] = now
		}
		if _, ok := w.placedAt[u]; !ok {
			w.placedAt[u] = now
		}
	}
	st.nominations = noms
}

func sameUIDs(a, b []types.UID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// state is a summary of what the watcher saw.
type state struct {
	seen, deleted, tried, unschedulable, bound, running, nominated, uncovered int
	// stranded pods are pending but nominated only to NodeClaims whose nodes
	// initialized: kube-scheduler has not bound them yet, or put other pods
	// there.
	stranded                                  int
	claims, launched, registered, initialized int
	// empty NodeClaims have an initialized node no pod is bound to.
	empty int
}

func (s state) String() string {
	return fmt.Sprintf("pods: %d seen (%d deleted), %d tried by kube-scheduler, %d unschedulable, %d nominated (%d to initialized nodes), %d bound, %d running, %d neither bound nor nominated | nodeclaims: %d (%d launched, %d registered, %d initialized, %d initialized and empty)",
		s.seen, s.deleted, s.tried, s.unschedulable, s.nominated, s.stranded, s.bound, s.running, s.uncovered, s.claims, s.launched, s.registered, s.initialized, s.empty)
}

func (w *watcher) state() state {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := state{seen: len(w.pods), deleted: w.deleted, tried: len(w.triedAt), claims: len(w.claims)}
	waiting := map[types.UID]bool{} // nominated to a claim still starting
	for _, c := range w.claims {
		if !c.initDone {
			for _, u := range c.nominations {
				waiting[u] = true
			}
		}
	}
	for uid, p := range w.pods {
		switch {
		case p.bound:
			s.bound++
		case w.nominated[uid] > 0:
			s.nominated++
			if !waiting[uid] {
				s.stranded++
			}
		default:
			s.uncovered++
		}
		if p.running {
			s.running++
		}
		if p.unschedulable && !p.bound {
			s.unschedulable++
		}
	}
	used := map[string]bool{}
	for _, p := range w.pods {
		if p.bound {
			used[p.node] = true
		}
	}
	for name, c := range w.claims {
		if c.initDone && !used[name] { // kwok names a claim's node after it
			s.empty++
		}
		if c.launched {
			s.launched++
		}
		if c.registered {
			s.registered++
		}
		if c.initDone {
			s.initialized++
		}
	}
	return s
}

func (w *watcher) lastClaimAdd() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastAdd
}

func (w *watcher) lastPlacementEvent() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastPlaced
}

// lastRun is when the latest pod's move to Running arrived: once every pod
// runs, the moment the last one did, not when a poll noticed.
func (w *watcher) lastRun() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastRunning
}

func (w *watcher) allTried() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastTried
}

// placement is how long after its creation arrived each pod was nominated to
// a NodeClaim or bound: what a user waits for, whoever was slow.
func (w *watcher) placement() (n int, p50, p90, p99, worst time.Duration) {
	w.mu.Lock()
	var ds []time.Duration
	for uid, at := range w.seenAt {
		if placed, ok := w.placedAt[uid]; ok {
			ds = append(ds, max(0, placed.Sub(at)))
		}
	}
	w.mu.Unlock()
	return quantiles(ds)
}

func quantiles(ds []time.Duration) (n int, p50, p90, p99, worst time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0, 0, 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(f float64) time.Duration { return ds[min(len(ds)-1, int(f*float64(len(ds))))] }
	return len(ds), q(0.5), q(0.9), q(0.99), ds[len(ds)-1]
}

// reaction is how long after kube-scheduler marked pods Unschedulable the
// controller nominated them to a NodeClaim: nodewright's own latency, apart
// from kube-scheduler's. Pods bound or nominated before the benchmark saw
// them marked (the controller plans pods the scheduler has not tried after
// --provision-untried-pods-after) do not count.
func (w *watcher) reaction() (n int, p50, p90, p99, worst time.Duration) {
	w.mu.Lock()
	var ds []time.Duration
	for uid, at := range w.unschedAt {
		if nom, ok := w.nominatedAt[uid]; ok && nom.After(at) {
			ds = append(ds, nom.Sub(at))
		}
	}
	w.mu.Unlock()
	return quantiles(ds)
}

func fmtRunning(d time.Duration) string {
	if d < 0 {
		return "not reached"
	}
	return fmt.Sprintf("+%.1fs", d.Seconds())
}

// objectName matches generated object names, so that errors group by kind.
var objectName = regexp.MustCompile(`\b[a-z0-9]+(-[a-z0-9]+)*-[a-z0-9]{5}\b`)

// solve is one "planned pending pods" line of the controller's log.
type solve struct {
	at                                               time.Duration // after the last pod was created
	pods, nominatedEarlier, newClaims, unschedulable int
	duration                                         time.Duration
	early                                            bool // an early pass: it launched only full NodeClaims
	held                                             int  // the part-filled NodeClaims an early pass held back
}

// parseSolves reads the controller's solves from its log and prints them, and
// the errors it logged.
func parseSolves(logPath string, tLastPod time.Time) []solve {
	f, err := os.Open(logPath)
	if err != nil {
		logf("reading the controller log: %v", err)
		return nil
	}
	defer f.Close()
	var out []solve
	errs := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			Level, Msg, Time, Duration, Error     string
			Pods, NominatedEarlier, NewNodeClaims int
			Unschedulable, HeldNodeClaims         int
			Early                                 bool
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if line.Level == "error" {
			msg := line.Msg
			if e := line.Error; e != "" {
				msg += ": " + objectName.ReplaceAllString(e, "<name>")
				if len(msg) > 200 {
					msg = msg[:200] + "..."
				}
			}
			errs[msg]++
		}
		if line.Msg != "planned pending pods" {
			continue
		}
		at, _ := time.Parse(time.RFC3339Nano, line.Time)
		d, _ := time.ParseDuration(line.Duration)
		out = append(out, solve{at: at.Sub(tLastPod), pods: line.Pods, nominatedEarlier: line.NominatedEarlier,
			newClaims: line.NewNodeClaims, unschedulable: line.Unschedulable, duration: d, early: line.Early, held: line.HeldNodeClaims})
	}
	var total, longest time.Duration
	for _, s := range out {
		total += s.duration
		longest = max(longest, s.duration)
	}
	logf("%d solves in the controller log, %s in all, the longest %s (times after the last pod was created):",
		len(out), total.Round(time.Millisecond), longest.Round(time.Millisecond))
	for i, s := range out {
		if len(out) > 60 && i == 30 {
			logf("  ... %d more ...", len(out)-60)
		}
		if len(out) > 60 && i >= 30 && i < len(out)-30 {
			continue
		}
		kind := "close"
		if s.early {
			kind = fmt.Sprintf("early, held %d", s.held)
		}
		logf("  %+8.2fs  pods %6d  nominatedEarlier %6d  newNodeClaims %5d  unschedulable %5d  took %s  (%s)",
			s.at.Seconds(), s.pods, s.nominatedEarlier, s.newClaims, s.unschedulable, s.duration.Round(time.Millisecond), kind)
	}
	if len(errs) > 0 {
		keys := make([]string, 0, len(errs))
		for k := range errs {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return errs[keys[i]] > errs[keys[j]] })
		logf("errors the controller logged:")
		for i, k := range keys {
			if i == 15 {
				logf("  ... and %d other kinds", len(keys)-15)
				break
			}
			logf("  %6dx %s", errs[k], k)
		}
	}
	return out
}

func dumpTail(path string, n int) {
	data, err := os.ReadFile(path)
	if err != nil {
		logf("controller log: %v", err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	logf("last %d lines of the controller log %s:\n%s", len(lines), path, strings.Join(lines, "\n"))
}

// profileLoop saves consecutive 30-second CPU profiles of the controller,
// each followed by a heap profile and a goroutine dump, until done closes.
func profileLoop(port int, dir string, done <-chan struct{}) {
	c := http.Client{Timeout: 2 * time.Minute}
	save := func(path, name string) {
		resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/%s", port, path))
		if err != nil {
			logf("profiling: %v", err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			logf("profiling: %v", err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
	}
	for i := 1; ; i++ {
		select {
		case <-done:
			return
		default:
		}
		save("profile?seconds=30", fmt.Sprintf("cpu-%03d.pb.gz", i))
		save("heap", fmt.Sprintf("heap-%03d.pb.gz", i))
		save("goroutine?debug=2", fmt.Sprintf("goroutines-%03d.txt", i))
		logf("profiling: saved cpu/heap/goroutines #%d in %s", i, dir)
	}
}

func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// scrapeMetric returns one sample of the controller's metrics endpoint, or
// NaN: series is the metric name with its labels exactly as exposed.
func scrapeMetric(port int, series string) float64 {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return math.NaN()
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return math.NaN()
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return math.NaN()
}

// controllerWrites reads nodewright_api_writes_total from the controller,
// the largest first: which of its loops made the writes the API server
// counts only by kind.
func controllerWrites(port int) []string {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return []string{err.Error()}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return []string{err.Error()}
	}
	type series struct {
		labels string
		n      float64
	}
	var all []series
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, "nodewright_api_writes_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			all = append(all, series{labels, v})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	out := make([]string, len(all))
	for i, s := range all {
		out[i] = fmt.Sprintf("%s=%.0f", s.labels, s.n)
	}
	return out
}

func controllerPID(env *devenv.Env) (int, error) {
	data, err := os.ReadFile(filepath.Join(env.Cluster.Dir, "nodewright-controller.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// componentCPU is the CPU each cluster component used since its reading in
// from, for a log line, and their sum.
func componentCPU(pids map[string]int, from map[string]time.Duration) (line []string, all time.Duration) {
	for _, n := range devcluster.Components() {
		if p, ok := pids[n]; ok {
			used := procCPU(p) - from[n]
			all += used
			line = append(line, fmt.Sprintf("%s %.1fs", n, used.Seconds()))
		}
	}
	return line, all
}

// cpuReadings is the CPU each process of pids (by name) has used so far.
func cpuReadings(pids map[string]int) map[string]time.Duration {
	out := make(map[string]time.Duration, len(pids))
	for n, p := range pids {
		out[n] = procCPU(p)
	}
	return out
}

// cpuSince formats the CPU each process of pids (the controller, then the
// components in their order) used since the readings in last, and stores
// the new readings there.
func cpuSince(pids map[string]int, last map[string]time.Duration) string {
	var parts []string
	for _, n := range append([]string{"controller"}, devcluster.Components()...) {
		if p, ok := pids[n]; ok {
			now := procCPU(p)
			parts = append(parts, fmt.Sprintf("%s %.1fs", n, (now-last[n]).Seconds()))
			last[n] = now
		}
	}
	return strings.Join(parts, ", ")
}

func componentPIDs(env *devenv.Env) map[string]int {
	out := map[string]int{}
	for _, n := range devcluster.Components() {
		data, err := os.ReadFile(filepath.Join(env.Cluster.Dir, "pids", n+".pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			out[n] = pid
		}
	}
	return out
}

type mem struct{ rssMiB, hwmMiB float64 }

// procMem reads a process's resident and peak resident memory.
func procMem(pid int) mem {
	var m mem
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return mem{math.NaN(), math.NaN()}
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[0], 64)
		switch k {
		case "VmRSS":
			m.rssMiB = kb / 1024
		case "VmHWM":
			m.hwmMiB = kb / 1024
		}
	}
	return m
}

// procCPU reads the user and system CPU time a process used so far.
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	// After the command: state is field 3 of stat, utime 14 and stime 15.
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / ticks
}

// schedulerReading is kube-scheduler's counters now and the port to read
// them again, or a zero port when they cannot be read (the run goes on
// without them).
func schedulerReading(pids map[string]int) (schedulerCounts, int) {
	pid, ok := pids[devcluster.ComponentKubeScheduler]
	if !ok {
		logf("kube-scheduler's pid is unknown; its counters will not be reported")
		return schedulerCounts{}, 0
	}
	port, err := schedulerPort(pid)
	if err == nil {
		var c schedulerCounts
		if c, err = readScheduler(port); err == nil {
			return c, port
		}
	}
	logf("kube-scheduler's counters will not be reported: %v", err)
	return schedulerCounts{}, 0
}

// logScheduler logs what kube-scheduler did since the reading before.
func logScheduler(what string, before schedulerCounts, port int) {
	if port == 0 {
		return
	}
	after, err := readScheduler(port)
	if err != nil {
		logf("%s: %v", what, err)
		return
	}
	logf("%s: %s", what, schedulerSummary(before, after, 8))
}

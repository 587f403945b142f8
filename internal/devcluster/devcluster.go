package devcluster

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// kwokConfig holds kwok's settings and Stages; see the file for why they
// differ from kwok's defaults.
//
//go:embed kwok.yaml
var kwokConfig []byte

// The node metadata kwok.yaml is written against. They must agree with what
// the kwok cloud provider puts on the Nodes it creates.
const (
	// ManagedNodeAnnotation, with value ManagedNodeAnnotationValue, makes kwok
	// animate a Node.
	ManagedNodeAnnotation      = "kwok.x-k8s.io/node"
	ManagedNodeAnnotationValue = "fake"
	// NotReadyLabel, with value "true", makes kwok leave a Node alone so that
	// a NotReady status patched into it sticks.
	NotReadyLabel = "nodewright.dev/kwok-not-ready"
)

// The processes of a cluster, by the names kwokctl gives them; Logs takes
// these names.
const (
	ComponentEtcd                  = "etcd"
	ComponentKubeAPIServer         = "kube-apiserver"
	ComponentKubeControllerManager = "kube-controller-manager"
	ComponentKubeScheduler         = "kube-scheduler"
	ComponentKwokController        = "kwok-controller"
)

// Components lists every process of a cluster, in start order.
func Components() []string {
	return []string{ComponentEtcd, ComponentKubeAPIServer, ComponentKubeControllerManager,
		ComponentKubeScheduler, ComponentKwokController}
}

// binaries are the files Options.BinariesDir must hold.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "kwokctl"}

const (
	// readyTimeout bounds the wait for a started cluster to work, so that a
	// component stuck without crashing fails Create instead of hanging it.
	readyTimeout = 2 * time.Minute
	// createAttempts: a port found free can be taken by someone else before
	// the component binds it; Create then tries again with other ports.
	createAttempts = 3
	// goneTimeout bounds the wait for killed processes to disappear.
	goneTimeout = 15 * time.Second
)

// Options say which cluster to create or open.
type Options struct {
	// Name tells clusters apart within WorkDir: lower-case letters, digits
	// and '-', at most 50 characters. Nothing stops two processes creating
	// the same name in the same WorkDir at once; give each its own.
	Name string
	// BinariesDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kubectl, kwok and kwokctl (testcluster.Binaries).
	BinariesDir string
	// WorkDir is kwokctl's KWOK_WORKDIR; the cluster's files go to
	// WorkDir/clusters/Name. Empty means DefaultWorkDir.
	WorkDir string
	// Log receives kwokctl's output; nil discards it. The components log to
	// files instead; see Logs.
	Log io.Writer
	// Ephemeral makes a watchdog process delete the cluster once the process
	// that created it exits, even when that process is killed or times out,
	// which a deferred Delete cannot promise. Tests want this; `nodewright dev
	// up`, whose cluster outlives the command, does not. Needs /bin/sh.
	Ephemeral bool
	// HeartbeatFactor stretches kwok's node lease duration, its status
	// updates and the node lifecycle controller's grace period together (0
	// or 1: a kubelet's real timings). A small machine simulating thousands
	// of nodes cannot renew every lease in time; kwokctl's own default for
	// such simulations is 5.
	HeartbeatFactor int
	// APIServerFlags are extra kube-apiserver flags, each "name=value" with
	// or without the leading "--" (http2-max-streams-per-connection=1000,
	// say): for experiments on the cluster itself, such as the scale
	// benchmark's NODEWRIGHT_SCALE_APISERVER_FLAGS. They come after
	// kwokctl's own flags, so for a flag kwokctl sets too the last wins.
	APIServerFlags []string
	// SchedulerFlags are extra kube-scheduler flags, given as APIServerFlags
	// are: the scale benchmark's NODEWRIGHT_SCALE_SCHEDULER_PPROF lets
	// /debug/pprof through with one.
	SchedulerFlags []string

	// owner is the process an Ephemeral cluster lives as long as; zero means
	// this one. Tests set it to watch the watchdog work.
	owner int
	// heartbeat, if set, replaces the ten minutes between kwok's status
	// heartbeats, so that tests see what a heartbeat would do to a node.
	heartbeat time.Duration
}

// Cluster is a kwokctl cluster on this machine.
type Cluster struct {
	// Name and WorkDir are as in Options, WorkDir made absolute.
	Name, WorkDir string
	// Dir holds the cluster's files: configuration, certificates, etcd's
	// data, pid files and the components' logs.
	Dir string
	// Kubeconfig is the path of a kubeconfig for the cluster's admin.
	Kubeconfig string

	binariesDir string
	log         io.Writer
	kwokPort    int
	heartbeat   time.Duration
	factor      int
	apiFlags    []any
	schedFlags  []any

	watchdog     *exec.Cmd
	watchdogDone chan struct{}
}

// DefaultWorkDir is where clusters live unless Options say otherwise: in the
// user's cache, because a cluster is throw-away state that must not mix with
// the clusters a developer makes with kwokctl under ~/.kwok.
func DefaultWorkDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the default kwok work dir: %w", err)
	}
	return filepath.Join(dir, "nodewright", "kwok"), nil
}

var validName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,48}[a-z0-9])?$`)

func newCluster(opts Options) (*Cluster, error) {
	if !validName.MatchString(opts.Name) {
		return nil, fmt.Errorf("invalid cluster name %q: want lower-case letters, digits and '-', at most 50 characters", opts.Name)
	}
	if opts.BinariesDir == "" {
		return nil, errors.New("no BinariesDir given")
	}
	var missing []string
	for _, b := range binaries {
		if fi, err := os.Stat(filepath.Join(opts.BinariesDir, b)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s lacks the executables %s (hack/kube-binaries.sh builds them)", opts.BinariesDir, strings.Join(missing, ", "))
	}
	workDir := opts.WorkDir
	if workDir == "" {
		var err error
		if workDir, err = DefaultWorkDir(); err != nil {
			return nil, err
		}
	}
	// Every path kwokctl writes into component flags derives from this one,
	// and running() recognises the cluster's processes by it.
	workDir, err := filepath.Abs(workDir)
	if err != nil {
		return nil, err
	}
	bin, err := filepath.Abs(opts.BinariesDir)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(workDir, "clusters", opts.Name)
	apiFlags, err := extraArgs(opts.APIServerFlags)
	if err != nil {
		return nil, fmt.Errorf("devcluster: APIServerFlags: %w", err)
	}
	schedFlags, err := extraArgs(opts.SchedulerFlags)
	if err != nil {
		return nil, fmt.Errorf("devcluster: SchedulerFlags: %w", err)
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	return &Cluster{
		Name:        opts.Name,
		WorkDir:     workDir,
		Dir:         dir,
		Kubeconfig:  filepath.Join(dir, "kubeconfig.yaml"),
		binariesDir: bin,
		log:         log,
		heartbeat:   opts.heartbeat,
		factor:      max(opts.HeartbeatFactor, 1),
		apiFlags:    apiFlags,
		schedFlags:  schedFlags,
	}, nil
}

// extraArgs turns "name=value" flags into kwokctl's extraArgs, passed after
// kwokctl's own.
func extraArgs(flags []string) ([]any, error) {
	var out []any
	for _, f := range flags {
		name, value, ok := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want name=value, as in http2-max-streams-per-connection=1000", f)
		}
		// Not "override": kwokctl then drops a flag it does not set itself.
		out = append(out, map[string]any{"key": name, "value": value})
	}
	return out, nil
}

// Create starts a new cluster and waits until it can run pods: the API server
// is ready, kube-controller-manager and kube-scheduler lead, the default
// ServiceAccounts exist and the kwok controller answers. It fails, wrapping
// fs.ErrExist, if a cluster of that name already is in WorkDir; on any other
// failure it removes what it started.
func Create(ctx context.Context, opts Options) (*Cluster, error) {
	c, err := newCluster(opts)
	if err != nil {
		return nil, fmt.Errorf("creating kwok cluster %s: %w", opts.Name, err)
	}
	if _, err := os.Stat(c.Dir); err == nil {
		return nil, fmt.Errorf("creating kwok cluster %s: %w: %s is in the way; delete the cluster first", c.Name, fs.ErrExist, c.Dir)
	}
	for attempt := 1; ; attempt++ {
		err := c.create(ctx)
		if err == nil {
			if opts.Ephemeral {
				if err := c.startWatchdog(opts.owner); err != nil {
					err = fmt.Errorf("creating kwok cluster %s: %w", c.Name, err)
					return nil, errors.Join(err, c.cleanUp(ctx))
				}
			}
			return c, nil
		}
		// The logs go with the cluster; whoever reads Log may need them.
		fmt.Fprintf(c.log, "devcluster: creating cluster %s: %v\n", c.Name, err)
		c.DumpLogs(c.log, 30)
		err = errors.Join(err, c.cleanUp(ctx))
		if !errors.Is(err, errPortInUse) || attempt == createAttempts || ctx.Err() != nil {
			return nil, fmt.Errorf("creating kwok cluster %s: %w", c.Name, err)
		}
		fmt.Fprintf(c.log, "devcluster: trying again with other ports\n")
	}
}

// cleanUp deletes a cluster that failed to come up, even when ctx is done:
// leaving its processes running is worse than a late return.
func (c *Cluster) cleanUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := c.Delete(ctx); err != nil {
		return fmt.Errorf("cleaning up: %w", err)
	}
	return nil
}

// Open returns the cluster of that name in WorkDir, created earlier by this
// process or another (as `nodewright dev down` needs), wrapping
// fs.ErrNotExist if there is none. A cluster whose creation was cut short
// opens too, so that it can be deleted.
func Open(opts Options) (*Cluster, error) {
	c, err := newCluster(opts)
	if err != nil {
		return nil, fmt.Errorf("opening kwok cluster %s: %w", opts.Name, err)
	}
	if _, err := os.Stat(c.Dir); err != nil {
		return nil, fmt.Errorf("opening kwok cluster %s: %w", c.Name, err)
	}
	return c, nil
}

func (c *Cluster) create(ctx context.Context) error {
	ports, err := freePorts(6)
	if err != nil {
		return err
	}
	c.kwokPort = ports[3]
	cfg, err := c.config(ports)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.WorkDir, 0o750); err != nil {
		return err
	}
	f, err := os.CreateTemp(c.WorkDir, c.Name+"-config-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(cfg); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// --kubeconfig= keeps kwokctl out of the user's ~/.kube/config.
	if err := c.kwokctl(ctx, true, "create", "cluster", "--config="+f.Name(), "--kubeconfig="); err != nil {
		return err
	}
	return c.waitReady(ctx)
}

// config is the kwokctl configuration for a cluster on the given ports
// (kube-apiserver, etcd, etcd peer, kwok, kube-controller-manager,
// kube-scheduler), followed by kwok.yaml.
func (c *Cluster) config(ports []int) ([]byte, error) {
	bin := func(name string) string { return filepath.Join(c.binariesDir, name) }
	kwokctl := map[string]any{
		"apiVersion": "config.kwok.x-k8s.io/v1alpha1",
		"kind":       "KwokctlConfiguration",
		"options": map[string]any{
			"runtime": "binary",
			// kwokctl's defaults today, named so that a kwokctl that enables
			// more (metrics-server, say, which it would download) does not.
			"components": Components(),
			// kwokctl picks ports counting down from 32767 in every process
			// alike, so two clusters created at once would collide.
			"kubeApiserverPort":         ports[0],
			"etcdPort":                  ports[1],
			"etcdPeerPort":              ports[2],
			"kwokControllerPort":        ports[3],
			"kubeControllerManagerPort": ports[4],
			"kubeSchedulerPort":         ports[5],
			// The default, 0.0.0.0, would offer an unauthenticated etcd to the
			// network.
			"bindAddress": "127.0.0.1",
			// kwokctl otherwise stretches lease duration, status updates and
			// the node lifecycle controller's grace period fivefold (to cut
			// load in huge simulations); nodewright should meet a kubelet's
			// real timings unless a test asks otherwise.
			"heartbeatFactor": c.factor,
			// Nothing else shares this API server; throttling would only
			// slow tests down.
			"disableQPSLimits": true,
			// Each a local file: kwokctl downloads any binary given by URL,
			// and its defaults are URLs.
			"etcdBinary":                  bin("etcd"),
			"kubeApiserverBinary":         bin("kube-apiserver"),
			"kubeControllerManagerBinary": bin("kube-controller-manager"),
			"kubeSchedulerBinary":         bin("kube-scheduler"),
			"kubectlBinary":               bin("kubectl"),
			"kwokControllerBinary":        bin("kwok"),
			// Neither create nor delete runs these, but their defaults are
			// URLs that other kwokctl commands would download; a missing local
			// file fails instead.
			"etcdctlBinary":       bin("etcdctl"),
			"kectlBinary":         bin("kectl"),
			"metricsServerBinary": bin("metrics-server"),
			"prometheusBinary":    bin("prometheus"),
			"jaegerBinary":        bin("jaeger"),
			"kindBinary":          bin("kind"),
		},
		"componentsPatches": []any{map[string]any{
			"name": ComponentKwokController,
			// The binary runtime always passes --manage-all-nodes=true, which
			// kwok refuses alongside kwok.yaml's annotation selector.
			"extraArgs": []any{map[string]any{"key": "manage-all-nodes", "value": "false", "override": true}},
		}},
	}
	for _, extra := range []struct {
		component string
		args      []any
	}{{ComponentKubeAPIServer, c.apiFlags}, {ComponentKubeScheduler, c.schedFlags}} {
		if len(extra.args) > 0 {
			kwokctl["componentsPatches"] = append(kwokctl["componentsPatches"].([]any),
				map[string]any{"name": extra.component, "extraArgs": extra.args})
		}
	}
	b, err := yaml.Marshal(kwokctl)
	if err != nil {
		return nil, err
	}
	stages := kwokConfig
	if c.heartbeat != 0 {
		const delay = "durationMilliseconds: 600000\n    jitterDurationMilliseconds: 610000\n"
		if bytes.Count(stages, []byte(delay)) != 1 {
			return nil, errors.New("kwok.yaml's heartbeat delay is not where the heartbeat option expects it")
		}
		ms := c.heartbeat.Milliseconds()
		stages = bytes.Replace(stages, []byte(delay), fmt.Appendf(nil, "durationMilliseconds: %d\n    jitterDurationMilliseconds: %d\n", ms, ms+ms/10), 1)
	}
	return append(append(b, "---\n"...), stages...), nil
}

// errPortInUse marks a start that failed because a component could not bind
// its port.
var errPortInUse = errors.New("port in use")

// freePorts returns n distinct ports that nothing listens on now. They are
// drawn at random below Linux's ephemeral range (32768-60999), where outgoing
// connections do not take them, so that processes choosing at the same time
// rarely choose alike; Create retries when they do.
func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, errors.New("no free ports between 20000 and 32000 on 127.0.0.1")
		}
		p := 20000 + rand.IntN(12000)
		if seen[p] {
			continue
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		ports = append(ports, p)
	}
	return ports, nil
}

// kwokctl runs kwokctl on this cluster. With watch, it also watches the
// components kwokctl starts and stops kwokctl as soon as one dies: kwokctl
// itself would wait two minutes for an API server that will never answer,
// and then report success.
func (c *Cluster) kwokctl(ctx context.Context, watch bool, args ...string) error {
	var out bytes.Buffer
	w := io.MultiWriter(c.log, &out)
	cmd := exec.CommandContext(ctx, filepath.Join(c.binariesDir, "kwokctl"), append([]string{"--name=" + c.Name}, args...)...)
	cmd.Env = c.env()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("running kwokctl: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var tick <-chan time.Time
	if watch {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("kwokctl %s: %w\n%s", strings.Join(args, " "), err, lastLines(out.Bytes(), 20))
			}
			return nil
		case <-tick:
			if err := c.checkComponents(); err != nil {
				_ = cmd.Process.Kill()
				<-done
				return err
			}
		}
	}
}

// env is the environment kwokctl and the components run with. kwokctl reads
// dozens of KWOK_* variables that would override the configuration, so none
// of the caller's pass; it looks for kubectl on PATH before its configured
// binary, so ours comes first.
func (c *Cluster) env() []string {
	var env []string
	path := ""
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "KWOK_"), strings.HasPrefix(kv, "KUBECONFIG="):
		case strings.HasPrefix(kv, "PATH="):
			path = strings.TrimPrefix(kv, "PATH=")
		default:
			env = append(env, kv)
		}
	}
	if path != "" {
		path = string(os.PathListSeparator) + path
	}
	return append(env, "KWOK_WORKDIR="+c.WorkDir, "PATH="+c.binariesDir+path)
}

// componentError says which component died, with the end of its log.
type componentError struct {
	component string
	log       []byte
}

func (e *componentError) Error() string {
	return fmt.Sprintf("%s exited; the end of its log:\n%s", e.component, lastLines(e.log, 25))
}

func (e *componentError) Is(target error) bool {
	return target == errPortInUse && bytes.Contains(e.log, []byte("address already in use"))
}

// checkComponents fails if a component kwokctl started has exited.
func (c *Cluster) checkComponents() error {
	for name, pid := range c.componentPIDs() {
		if !c.running(pid) {
			log, _ := os.ReadFile(c.logPath(name))
			return &componentError{component: name, log: log}
		}
	}
	return nil
}

// componentPIDs reads the pid files kwokctl writes for the components it has
// started.
func (c *Cluster) componentPIDs() map[string]int {
	pids := map[string]int{}
	for _, name := range Components() {
		b, err := os.ReadFile(filepath.Join(c.Dir, "pids", name+".pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			pids[name] = pid
		}
	}
	return pids
}

// running reports whether pid is a live process of this cluster. Where /proc
// tells, a zombie counts as gone (kwokctl does not reap the components it
// starts, and a container's init may not either) and so does a process whose
// command line does not name the cluster's directory, which every component's
// flags do: the pid has been reused.
func (c *Cluster) running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			return false
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err == nil && bytes.Contains(cmdline, []byte(c.Dir+string(filepath.Separator)))
	}
	if _, perr := os.Stat("/proc/self/stat"); perr == nil {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}

// waitReady waits until the cluster can run pods, or fails early when a
// component exits.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for {
		if err := c.checkComponents(); err != nil {
			return err
		}
		notReady := c.notReady(ctx, cs)
		if notReady == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the cluster to work: %w; last: %v", ctx.Err(), notReady)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// notReady says what the cluster still lacks to run pods, or nil.
func (c *Cluster) notReady(ctx context.Context, cs kubernetes.Interface) error {
	if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		return fmt.Errorf("kube-apiserver is not ready: %w", err)
	}
	// Leader leases show that both run their loops, not merely that they
	// started: pods created now get scheduled and ReplicaSets filled.
	for _, name := range []string{ComponentKubeControllerManager, ComponentKubeScheduler} {
		l, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return fmt.Errorf("%s does not lead yet: %v", name, err)
		}
	}
	// The ServiceAccount admission plugin rejects pods in a namespace whose
	// default ServiceAccount kube-controller-manager has not made yet.
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem} {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return fmt.Errorf("no default ServiceAccount in %s yet: %w", ns, err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/healthz", c.kwokPort), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("kwok controller does not answer: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("kwok controller is not healthy: %s", resp.Status)
	}
	return nil
}

// RESTConfig returns a client configuration for the cluster's admin.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig of kwok cluster %s: %w", c.Name, err)
	}
	// The certificates are read now, not named: given file names, client-go
	// reloads them for as long as the process lives, and once the cluster
	// is deleted it logs an error every few seconds, through the next
	// cluster's test or benchmark.
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return nil, fmt.Errorf("reading the client certificates of kwok cluster %s: %w", c.Name, err)
	}
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = "", "", ""
	// client-go's default of 5 requests a second exists to spare shared API
	// servers; this one serves a single test or developer.
	cfg.QPS, cfg.Burst = 200, 400
	return cfg, nil
}

// startWatchdog starts a shell that waits for the owner process to exit and
// then deletes the cluster. It ignores the signals a terminal or test runner
// sends to the whole process group on interrupt, and writes nowhere, so it
// neither dies with its owner nor holds `go test`'s output pipe open.
func (c *Cluster) startWatchdog(owner int) error {
	if owner == 0 {
		owner = os.Getpid()
	}
	const script = `trap '' HUP INT TERM
while kill -0 "$1" 2>/dev/null; do sleep 1; done
exec "$2" --name="$3" delete cluster --kubeconfig="$4"`
	cmd := exec.Command("/bin/sh", "-c", script, "devcluster-watchdog",
		strconv.Itoa(owner), filepath.Join(c.binariesDir, "kwokctl"), c.Name, c.Kubeconfig)
	cmd.Env = c.env()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the watchdog that deletes the cluster when process %d exits: %w", owner, err)
	}
	c.watchdog, c.watchdogDone = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(c.watchdogDone)
	}()
	return nil
}

// Delete stops the cluster's processes and removes its files (kwokctl delete
// cluster), returning once the processes are gone. Deleting a cluster that is
// not there succeeds, and so does deleting one that kwokctl never finished
// creating.
func (c *Cluster) Delete(ctx context.Context) error {
	if c.watchdog != nil {
		_ = c.watchdog.Process.Kill()
		<-c.watchdogDone
		c.watchdog = nil
	}
	if _, err := os.Stat(c.Dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	pids := c.componentPIDs()
	var err error
	killed := false
	// Without its configuration kwokctl does not know the cluster is there.
	if _, serr := os.Stat(filepath.Join(c.Dir, "kwok.yaml")); serr == nil {
		// kwokctl removes the cluster's context from the kubeconfig it is
		// given; the cluster's own, about to go, keeps it off the user's.
		err = c.kwokctl(ctx, false, "delete", "cluster", "--kubeconfig="+c.Kubeconfig)
		killed = err == nil
	}
	// kwokctl sends SIGKILL and does not wait for it to work. If it failed,
	// or never ran, the processes get their SIGKILL here.
	deadline := time.Now().Add(goneTimeout)
	for name, pid := range pids {
		for c.running(pid) {
			if p, perr := os.FindProcess(pid); perr == nil && !killed {
				_ = p.Kill()
			}
			if time.Now().After(deadline) {
				err = errors.Join(err, fmt.Errorf("%s (pid %d) is still running", name, pid))
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if rerr := os.RemoveAll(c.Dir); rerr != nil {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("deleting kwok cluster %s: %w", c.Name, err)
	}
	return nil
}

func (c *Cluster) logPath(component string) string {
	return filepath.Join(c.Dir, "logs", component+".log")
}

// Logs returns what a component (one of Components) has logged, as `kwokctl
// logs` would.
func (c *Cluster) Logs(component string) ([]byte, error) {
	known := false
	for _, name := range Components() {
		known = known || name == component
	}
	if !known {
		return nil, fmt.Errorf("kwok cluster %s has no component %q", c.Name, component)
	}
	b, err := os.ReadFile(c.logPath(component))
	if err != nil {
		return nil, fmt.Errorf("reading the %s log of kwok cluster %s: %w", component, c.Name, err)
	}
	return b, nil
}

// DumpLogs writes the last lines of every component's log to w, to explain a
// failed test.
func (c *Cluster) DumpLogs(w io.Writer, lines int) {
	for _, name := range Components() {
		b, err := c.Logs(name)
		if err != nil {
			fmt.Fprintf(w, "==> %s: %v\n", name, err)
			continue
		}
		fmt.Fprintf(w, "==> %s (%s, last %d lines) <==\n%s\n", name, c.logPath(name), lines, lastLines(b, lines))
	}
}

// lastLines returns the last n lines of b.
func lastLines(b []byte, n int) []byte {
	if n <= 0 {
		return nil
	}
	b = bytes.TrimRight(b, "\n")
	end := len(b)
	for ; n > 0; n-- {
		i := bytes.LastIndexByte(b[:end], '\n')
		if i < 0 {
			return b
		}
		end = i
	}
	return b[end+1:]
}

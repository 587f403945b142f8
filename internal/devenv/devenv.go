// Package devenv is a local nodewright environment: a kwokctl cluster
// (internal/devcluster) with nodewright's CRDs installed and the controller
// running as a separate process, as it would in a real cluster. `nodewright
// dev` and the end-to-end tests both stand on it, so what a newcomer tries
// is what the tests check.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/config/crd"
	"github.com/nodewright/nodewright/config/rbac"
	"github.com/nodewright/nodewright/internal/devcluster"
)

// Env is a running cluster and, possibly, its controller.
type Env struct {
	Cluster *devcluster.Cluster
	Config  *rest.Config
	// Binary is the nodewright executable the controller runs from.
	Binary string
	// ControllerArgs are extra arguments for `nodewright controller`.
	ControllerArgs []string
	// ControllerEnv are extra environment variables for it (GOMEMLIMIT=...).
	ControllerEnv []string

	// procs are the controller replicas this Env started, by index;
	// replica 0 is the controller of StartController.
	procs map[int]*process
}

// process is one running controller replica.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	// logFrom is the size of the replica's log when it started: what
	// follows is this process's.
	logFrom int64
	// scanned is how far Leader read the log, and leads what it found.
	scanned int64
	leads   bool
}

// Up creates the cluster, installs the CRDs and returns the environment;
// the controller is started separately.
func Up(ctx context.Context, opts devcluster.Options, binary string) (*Env, error) {
	c, err := devcluster.Create(ctx, opts)
	if err != nil {
		return nil, err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		_ = c.Delete(context.Background())
		return nil, err
	}
	if err := crd.Install(ctx, cfg); err != nil {
		_ = c.Delete(context.Background())
		return nil, err
	}
	if err := installRBAC(ctx, cfg); err != nil {
		_ = c.Delete(context.Background())
		return nil, err
	}
	return &Env{Cluster: c, Config: cfg, Binary: binary}, nil
}

// Open finds an environment an earlier `dev up` left running.
func Open(opts devcluster.Options, binary string) (*Env, error) {
	c, err := devcluster.Open(opts)
	if err != nil {
		return nil, err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	return &Env{Cluster: c, Config: cfg, Binary: binary}, nil
}

// ControllerLog is where the controller's JSON logs go.
func (e *Env) ControllerLog() string { return e.ReplicaLog(0) }

func (e *Env) pidFile() string { return filepath.Join(e.Cluster.Dir, "nodewright-controller.pid") }

// StartController starts `nodewright controller` against the cluster, with
// its own session so it outlives the command that started it (dev up) and
// can be killed alone (tests). It is replica 0 (see StartReplica), the one
// a pid file tells other commands of.
func (e *Env) StartController() error { return e.StartReplica(0) }

// KillController sends sig to the controller and waits for it to exit; a
// controller another process started is found from the pid file.
func (e *Env) KillController(sig syscall.Signal) error {
	if e.procs[0] == nil {
		return e.killFromPidFile(sig)
	}
	return e.KillReplica(0, sig)
}

// ControllerRunning reports whether the controller this Env started is
// still running.
func (e *Env) ControllerRunning() bool { return e.ReplicaRunning(0) }

// ReplicaLog is where replica i's logs go; replica 0's is ControllerLog.
func (e *Env) ReplicaLog(i int) string {
	if i == 0 {
		return filepath.Join(e.Cluster.Dir, "nodewright-controller.log")
	}
	return filepath.Join(e.Cluster.Dir, fmt.Sprintf("nodewright-controller-%d.log", i))
}

// StartReplica starts replica i of the controller: replica 0 is the one
// StartController starts, the others run beside it with the same arguments
// and their own logs, as the replicas of a Deployment would, one leading and
// the rest standing by for the lease.
func (e *Env) StartReplica(i int) error {
	if e.procs[i] != nil {
		return fmt.Errorf("controller replica %d already running", i)
	}
	logf, err := os.OpenFile(e.ReplicaLog(i), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening controller log: %w", err)
	}
	defer logf.Close()
	st, err := logf.Stat()
	if err != nil {
		return fmt.Errorf("opening controller log: %w", err)
	}
	// The controller acts as its ServiceAccount, under config/rbac's rules,
	// as it would in a cluster: a rule missing there fails here first.
	kubeconfig := filepath.Join(e.Cluster.Dir, "nodewright-controller.kubeconfig")
	if err := impersonating(e.Cluster.Kubeconfig, kubeconfig, rbac.ServiceAccount); err != nil {
		return err
	}
	args := append([]string{"controller", "--kubeconfig", kubeconfig}, e.ControllerArgs...)
	if i != 0 {
		// The addresses in ControllerArgs are replica 0's; the last flag
		// wins, and the others serve neither probes nor metrics.
		args = append(args, "--health-probe-bind-address=0", "--metrics-bind-address=0")
	}
	cmd := exec.Command(e.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(e.ControllerEnv) > 0 {
		cmd.Env = append(os.Environ(), e.ControllerEnv...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s controller: %w", e.Binary, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{}), logFrom: st.Size()}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	if e.procs == nil {
		e.procs = map[int]*process{}
	}
	e.procs[i] = p
	if i != 0 {
		return nil
	}
	return os.WriteFile(e.pidFile(), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

// KillReplica sends sig to replica i and waits for it to exit (SIGKILL
// after 30 seconds). A replica not running is no error.
func (e *Env) KillReplica(i int, sig syscall.Signal) error {
	p := e.procs[i]
	if p == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	delete(e.procs, i)
	if i == 0 {
		_ = os.Remove(e.pidFile())
	}
	return nil
}

// ReplicaRunning reports whether replica i, started by this Env, is still
// running.
func (e *Env) ReplicaRunning(i int) bool {
	p := e.procs[i]
	if p == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Replicas lists the replicas this Env started that are still running,
// in order.
func (e *Env) Replicas() []int {
	var out []int
	for i := range e.procs {
		if e.ReplicaRunning(i) {
			out = append(out, i)
		}
	}
	sort.Ints(out)
	return out
}

// killFromPidFile stops a controller started by another process (dev up).
func (e *Env) killFromPidFile(sig syscall.Signal) error {
	b, err := os.ReadFile(e.pidFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("reading %s: %w", e.pidFile(), err)
	}
	_ = syscall.Kill(pid, sig)
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return os.Remove(e.pidFile())
}

// Down stops the controller replicas and deletes the cluster.
func (e *Env) Down(ctx context.Context) error {
	for _, i := range e.Replicas() {
		if i != 0 {
			_ = e.KillReplica(i, syscall.SIGTERM)
		}
	}
	_ = e.KillController(syscall.SIGTERM)
	return e.Cluster.Delete(ctx)
}

// installRBAC applies the controller's ServiceAccount and rules.
func installRBAC(ctx context.Context, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("installing RBAC: %w", err)
	}
	if err := Apply(ctx, c, rbac.Manifest); err != nil {
		return fmt.Errorf("installing RBAC: %w", err)
	}
	return nil
}

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

	controller *exec.Cmd
	exited     chan struct{}
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
func (e *Env) ControllerLog() string {
	return filepath.Join(e.Cluster.Dir, "nodewright-controller.log")
}

func (e *Env) pidFile() string { return filepath.Join(e.Cluster.Dir, "nodewright-controller.pid") }

// StartController starts `nodewright controller` against the cluster, with
// its own session so it outlives the command that started it (dev up) and
// can be killed alone (tests).
func (e *Env) StartController() error {
	if e.controller != nil {
		return errors.New("controller already running")
	}
	logf, err := os.OpenFile(e.ControllerLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening controller log: %w", err)
	}
	// The controller acts as its ServiceAccount, under config/rbac's rules,
	// as it would in a cluster: a rule missing there fails here first.
	kubeconfig := filepath.Join(e.Cluster.Dir, "nodewright-controller.kubeconfig")
	if err := impersonating(e.Cluster.Kubeconfig, kubeconfig, rbac.ServiceAccount); err != nil {
		logf.Close()
		return err
	}
	args := append([]string{"controller", "--kubeconfig", kubeconfig}, e.ControllerArgs...)
	cmd := exec.Command(e.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(e.ControllerEnv) > 0 {
		cmd.Env = append(os.Environ(), e.ControllerEnv...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s controller: %w", e.Binary, err)
	}
	logf.Close()
	e.controller = cmd
	e.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(e.exited) }()
	return os.WriteFile(e.pidFile(), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

// KillController sends sig to the controller and waits for it to exit.
func (e *Env) KillController(sig syscall.Signal) error {
	if e.controller == nil {
		return e.killFromPidFile(sig)
	}
	_ = e.controller.Process.Signal(sig)
	select {
	case <-e.exited:
	case <-time.After(30 * time.Second):
		_ = e.controller.Process.Kill()
		<-e.exited
	}
	e.controller = nil
	_ = os.Remove(e.pidFile())
	return nil
}

// ControllerRunning reports whether the controller this Env started is
// still running.
func (e *Env) ControllerRunning() bool {
	if e.controller == nil {
		return false
	}
	select {
	case <-e.exited:
		return false
	default:
		return true
	}
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

// Down stops the controller and deletes the cluster.
func (e *Env) Down(ctx context.Context) error {
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

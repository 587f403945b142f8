package devcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
)

// process is how a component was started, as /proc tells it: what it takes
// to start the same process again.
type process struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
}

// readProcess reads the command line, environment and working directory of
// a running process.
func readProcess(pid int) (process, error) {
	proc := fmt.Sprintf("/proc/%d/", pid)
	cmdline, err := os.ReadFile(proc + "cmdline")
	if err != nil {
		return process{}, fmt.Errorf("reading the command line of process %d: %w", pid, err)
	}
	environ, err := os.ReadFile(proc + "environ")
	if err != nil {
		return process{}, fmt.Errorf("reading the environment of process %d: %w", pid, err)
	}
	dir, err := os.Readlink(proc + "cwd")
	if err != nil {
		return process{}, fmt.Errorf("reading the working directory of process %d: %w", pid, err)
	}
	p := process{Args: splitNUL(cmdline), Env: splitNUL(environ), Dir: dir}
	if len(p.Args) == 0 {
		return process{}, fmt.Errorf("process %d has no command line (a zombie?)", pid)
	}
	return p, nil
}

// splitNUL splits the NUL-terminated strings /proc holds.
func splitNUL(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil
	}
	var out []string
	for _, s := range bytes.Split(b, []byte{0}) {
		out = append(out, string(s))
	}
	return out
}

// exited reports whether every thread of process pid has exited (gone or a
// zombie), and so has closed the process's files, its sockets among them.
func exited(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return true
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X' {
			return false
		}
	}
	return true
}

func (c *Cluster) pidPath(component string) string {
	return filepath.Join(c.Dir, "pids", component+".pid")
}

// processPath is where StopComponent keeps how a component ran, so that
// StartComponent, perhaps from another Cluster handle, can start it again.
func (c *Cluster) processPath(component string) string {
	return filepath.Join(c.Dir, "pids", component+".process.json")
}

func (c *Cluster) checkComponent(component string) error {
	for _, name := range Components() {
		if name == component {
			return nil
		}
	}
	return fmt.Errorf("kwok cluster %s has no component %q", c.Name, component)
}

// StopComponent kills a component (one of Components) and returns once it
// is gone: its port refuses connections, as when the machine it runs on
// fails. It is not paused (SIGSTOP), which would leave connections hanging
// instead. StartComponent starts it again.
func (c *Cluster) StopComponent(ctx context.Context, component string) error {
	if err := c.checkComponent(component); err != nil {
		return err
	}
	pid, ok := c.componentPIDs()[component]
	if !ok || !c.running(pid) {
		return fmt.Errorf("stopping %s of kwok cluster %s: not running", component, c.Name)
	}
	// kwokctl keeps no record of how it started a component beyond the
	// process itself. Every component's is kept, not only this one's: some
	// exit when it is gone (see StartComponent).
	if err := c.recordComponents(); err != nil {
		return fmt.Errorf("stopping %s of kwok cluster %s: %w", component, c.Name, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s of kwok cluster %s: %w", component, c.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, goneTimeout)
	defer cancel()
	// A dying process loses its command line, and its first thread turns
	// zombie, before the last thread closes the files: its port may take
	// connections until then.
	for c.running(pid) || !exited(pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopping %s of kwok cluster %s: pid %d still runs: %w", component, c.Name, pid, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// recordComponents writes down how each running component runs.
func (c *Cluster) recordComponents() error {
	for name, pid := range c.componentPIDs() {
		if !c.running(pid) {
			continue
		}
		p, err := readProcess(pid)
		if err != nil {
			return err
		}
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.processPath(name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// StartComponent starts a component StopComponent stopped, with the command
// line, environment, working directory and log file kwokctl gave it, and
// records its pid where kwokctl does, so that Delete stops it.
//
// Starting kube-apiserver returns once the cluster works again. On the
// way it starts again the components that exited while the server was
// away: kube-scheduler and kube-controller-manager exit when they cannot
// renew their lease, and in a real cluster the kubelet would restart them.
func (c *Cluster) StartComponent(ctx context.Context, component string) error {
	if err := c.checkComponent(component); err != nil {
		return err
	}
	if pid, ok := c.componentPIDs()[component]; ok && c.running(pid) {
		return fmt.Errorf("starting %s of kwok cluster %s: already running", component, c.Name)
	}
	pid, err := c.startRecorded(component)
	if err != nil {
		return fmt.Errorf("starting %s of kwok cluster %s: %w", component, c.Name, err)
	}
	if component != ComponentKubeAPIServer {
		return nil
	}
	if err := c.waitAPIServer(ctx, pid); err != nil {
		return fmt.Errorf("starting %s of kwok cluster %s: %w", component, c.Name, err)
	}
	restarted, err := c.restartExited()
	if err != nil {
		return fmt.Errorf("starting %s of kwok cluster %s: %w", component, c.Name, err)
	}
	if len(restarted) > 0 {
		fmt.Fprintf(c.log, "devcluster: started %v again, which exited while kube-apiserver was away\n", restarted)
	}
	if err := c.waitReady(ctx); err != nil {
		return fmt.Errorf("starting %s of kwok cluster %s: %w", component, c.Name, err)
	}
	return nil
}

// startRecorded starts a component as recordComponents found it.
func (c *Cluster) startRecorded(component string) (int, error) {
	b, err := os.ReadFile(c.processPath(component))
	if err != nil {
		return 0, fmt.Errorf("not stopped by StopComponent: %w", err)
	}
	var p process
	if err := json.Unmarshal(b, &p); err != nil {
		return 0, err
	}
	return c.startProcess(component, p)
}

// restartExited starts again, in start order, each recorded component that
// no longer runs, and returns their names.
func (c *Cluster) restartExited() ([]string, error) {
	pids := c.componentPIDs()
	var out []string
	for _, name := range Components() {
		if pid, ok := pids[name]; !ok || c.running(pid) {
			continue
		}
		if _, err := os.Stat(c.processPath(name)); err != nil {
			continue
		}
		if _, err := c.startRecorded(name); err != nil {
			return out, fmt.Errorf("starting %s again: %w", name, err)
		}
		out = append(out, name)
	}
	return out, nil
}

// startProcess starts p in its own session, as kwokctl does, so that it
// outlives this process and signals sent to this one's group; its output
// goes to the end of the component's log.
func (c *Cluster) startProcess(component string, p process) (int, error) {
	logf, err := os.OpenFile(c.logPath(component), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	cmd := exec.Command(p.Args[0], p.Args[1:]...)
	cmd.Env, cmd.Dir = p.Env, p.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	// Reaped here while this process lives; reparented if it goes first.
	go func() { _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	if err := os.WriteFile(c.pidPath(component), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return 0, err
	}
	return pid, nil
}

// waitAPIServer waits until the kube-apiserver of pid serves /readyz, or
// fails early if it exits.
func (c *Cluster) waitAPIServer(ctx context.Context, pid int) error {
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
		if !c.running(pid) {
			log, _ := os.ReadFile(c.logPath(ComponentKubeAPIServer))
			return &componentError{component: ComponentKubeAPIServer, log: log}
		}
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for /readyz: %w; last: %v", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

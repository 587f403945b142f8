package devcluster

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestSplitNUL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"a\x00b c\x00", []string{"a", "b c"}},
		{"a\x00\x00b\x00", []string{"a", "", "b"}},
		{"a", []string{"a"}},
		{"", nil},
		{"\x00", nil},
	} {
		if got := splitNUL([]byte(tc.in)); !slices.Equal(got, tc.want) {
			t.Errorf("splitNUL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A component stopped is gone, and started again runs with the same
// command line, environment and working directory, logs to the same file
// and is recorded in the pid file Delete reads. A stand-in process plays
// the component: anything that names the cluster's folder, as every
// component's flags do.
func TestStopAndStartComponent(t *testing.T) {
	c := standInCluster(t)
	const name = ComponentKwokController
	cwd := t.TempDir()
	orig := startStandIn(t, c, name, cwd)
	want, err := readProcess(orig)
	if err != nil {
		t.Fatal(err)
	}
	if !c.running(orig) {
		t.Fatal("the stand-in does not count as running")
	}

	ctx := context.Background()
	if err := c.StartComponent(ctx, name); err == nil {
		t.Error("StartComponent of a running component succeeded")
	}
	if err := c.StopComponent(ctx, name); err != nil {
		t.Fatal(err)
	}
	if c.running(orig) || !exited(orig) {
		t.Fatal("the component still runs after StopComponent returned")
	}
	if err := c.StopComponent(ctx, name); err == nil {
		t.Error("stopping a stopped component succeeded")
	}
	if err := c.StartComponent(ctx, name); err != nil {
		t.Fatal(err)
	}
	pid := c.componentPIDs()[name]
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if pid == orig || !c.running(pid) {
		t.Fatalf("pid file says %d after the start (stopped one: %d), running: %v", pid, orig, c.running(pid))
	}
	got, err := readProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Args, want.Args) || !slices.Equal(got.Env, want.Env) || got.Dir != want.Dir {
		t.Errorf("started again as %+v, want %+v", got, want)
	}
	waitLog(t, c.logPath(name), "started in "+cwd+" with yes", 2)
	if err := c.StopComponent(ctx, "kubelet"); err == nil || !strings.Contains(err.Error(), "no component") {
		t.Errorf("stopping an unknown component: %v", err)
	}
}

// What exited after another component was stopped (kube-scheduler losing
// its lease while kube-apiserver is away) is started again as it ran;
// what still runs is left alone.
func TestRestartExited(t *testing.T) {
	c := standInCluster(t)
	scheduler := startStandIn(t, c, ComponentKubeScheduler, t.TempDir())
	manager := startStandIn(t, c, ComponentKubeControllerManager, t.TempDir())
	kwok := startStandIn(t, c, ComponentKwokController, t.TempDir())
	if err := c.StopComponent(context.Background(), ComponentKwokController); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(scheduler, syscall.SIGKILL)
	for c.running(scheduler) {
		time.Sleep(10 * time.Millisecond)
	}
	restarted, err := c.restartExited()
	if err != nil {
		t.Fatal(err)
	}
	pids := c.componentPIDs()
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if want := []string{ComponentKubeScheduler, ComponentKwokController}; !slices.Equal(restarted, want) {
		t.Errorf("started again: %v, want %v", restarted, want)
	}
	if pids[ComponentKubeControllerManager] != manager {
		t.Errorf("kube-controller-manager, still running, was started again")
	}
	for _, name := range []string{ComponentKubeScheduler, ComponentKwokController} {
		if pid := pids[name]; pid == scheduler || pid == kwok || !c.running(pid) {
			t.Errorf("%s: pid %d, running %v", name, pid, c.running(pid))
		}
	}
}

// standInCluster is a Cluster of stand-in processes: its folders, nothing
// running.
func standInCluster(t *testing.T) *Cluster {
	c := &Cluster{Name: "stand-in", Dir: t.TempDir()}
	for _, d := range []string{"pids", "logs"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, d), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// startStandIn starts a process playing component, as kwokctl would: its
// pid in the pid file, its output in the log, in its own session; it
// returns once the process has logged its start.
func startStandIn(t *testing.T, c *Cluster, component, cwd string) int {
	t.Helper()
	logf, err := os.OpenFile(c.logPath(component), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command("/bin/sh", "-c", `echo "started in $PWD with $STAND_IN"; while :; do sleep 1; done`, filepath.Join(c.Dir, component))
	cmd.Env = []string{"STAND_IN=yes", "PATH=" + os.Getenv("PATH")}
	cmd.Dir = cwd
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	writePID(t, c, component, cmd.Process.Pid)
	// Stopped before its shell said anything, a start would leave no line
	// in the log.
	waitLog(t, c.logPath(component), "started in "+cwd+" with yes", 1)
	return cmd.Process.Pid
}

func writePID(t *testing.T, c *Cluster, component string, pid int) {
	t.Helper()
	if err := os.WriteFile(c.pidPath(component), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitLog waits until the file at path holds line n times.
func waitLog(t *testing.T, path, line string, n int) {
	t.Helper()
	var log []byte
	deadline := time.Now().Add(10 * time.Second)
	for bytes.Count(log, []byte(line)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q %d times, want %d:\n%s", path, line, bytes.Count(log, []byte(line)), n, log)
		}
		time.Sleep(20 * time.Millisecond)
		log, _ = os.ReadFile(path)
	}
}

// kube-apiserver stopped refuses connections; started again it serves the
// same data, and Delete (testDelete, later) stops the new process.
func testAPIServerStopAndStart(ctx context.Context, t *testing.T, c *Cluster, cs kubernetes.Interface) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survives-restart", Namespace: metav1.NamespaceDefault}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	before := c.componentPIDs()[ComponentKubeAPIServer]
	start := time.Now()
	if err := c.StopComponent(ctx, ComponentKubeAPIServer); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver stopped in %v", time.Since(start).Round(time.Millisecond))
	if conn, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		conn.Close()
		t.Fatalf("%s accepts connections with kube-apiserver stopped", u.Host)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("connecting to the stopped kube-apiserver: %v, want connection refused", err)
	}
	if err := readyz(ctx, c); err == nil {
		t.Fatal("/readyz answered with kube-apiserver stopped")
	}
	start = time.Now()
	if err := c.StartComponent(ctx, ComponentKubeAPIServer); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver started again and ready in %v", time.Since(start).Round(time.Millisecond))
	if after := c.componentPIDs()[ComponentKubeAPIServer]; after == before || !c.running(after) {
		t.Errorf("kube-apiserver pid %d after the start, %d before; running: %v", after, before, c.running(after))
	}
	if err := readyz(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("the ConfigMap written before the stop: %v, %v", got, err)
	}
	// kwok reconnects and animates a node created now.
	n := kwokNode("kwok-after-restart", "after-restart")
	createNode(ctx, t, cs, n)
	took := waitNodeReady(ctx, t, cs, n.Name, 60*time.Second)
	t.Logf("a node created after the restart Ready in %v", took.Round(time.Millisecond))
}

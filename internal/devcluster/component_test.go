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
	c := &Cluster{Name: "stand-in", Dir: t.TempDir()}
	for _, d := range []string{"pids", "logs"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, d), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	const name = ComponentKwokController
	logf, err := os.Create(c.logPath(name))
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	orig := exec.Command("/bin/sh", "-c", `echo "started in $PWD with $STAND_IN"; while :; do sleep 1; done`, filepath.Join(c.Dir, "marker"))
	orig.Env = []string{"STAND_IN=yes", "PATH=" + os.Getenv("PATH")}
	orig.Dir = cwd
	orig.Stdout, orig.Stderr = logf, logf
	orig.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := orig.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	go func() { _ = orig.Wait() }()
	writePID(t, c, name, orig.Process.Pid)
	want, err := readProcess(orig.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if !c.running(orig.Process.Pid) {
		t.Fatal("the stand-in does not count as running")
	}

	// Stopped before its shell said anything, the first start would leave
	// no line in the log.
	waitLog(t, c.logPath(name), "started in "+cwd+" with yes", 1)

	ctx := context.Background()
	if err := c.StartComponent(ctx, name); err == nil {
		t.Error("StartComponent of a component never stopped succeeded")
	}
	if err := c.StopComponent(ctx, name); err != nil {
		t.Fatal(err)
	}
	if c.running(orig.Process.Pid) {
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
	if pid == orig.Process.Pid || !c.running(pid) {
		t.Fatalf("pid file says %d after the start (stopped one: %d), running: %v", pid, orig.Process.Pid, c.running(pid))
	}
	got, err := readProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Args, want.Args) || !slices.Equal(got.Env, want.Env) || got.Dir != want.Dir {
		t.Errorf("started again as %+v, want %+v", got, want)
	}
	waitLog(t, c.logPath(name), "started in "+cwd+" with yes", 2)
	if _, err := os.Stat(c.stoppedPath(name)); !os.IsNotExist(err) {
		t.Errorf("the record of the stopped component outlived its start: %v", err)
	}
	if err := c.StopComponent(ctx, "kubelet"); err == nil || !strings.Contains(err.Error(), "no component") {
		t.Errorf("stopping an unknown component: %v", err)
	}
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

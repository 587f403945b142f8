package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/devcluster"
	"github.com/nodewright/nodewright/internal/kubebin"
)

// dev down is given only the cluster's name, as a user runs it after dev
// up: it must find the binaries itself (it once refused with "no
// BinariesDir given" and left the cluster running).
func TestDevDownRemovesTheCluster(t *testing.T) {
	bin, err := kubebin.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	work := t.TempDir()
	c, err := devcluster.Create(ctx, devcluster.Options{Name: "dev-down", BinariesDir: bin, WorkDir: work, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	// Runs before t.TempDir's removal; a no-op once dev down worked.
	t.Cleanup(func() { _ = c.Delete(context.Background()) })
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := devDown(ctx, devcluster.Options{Name: "dev-down", WorkDir: work}); err != nil {
		t.Fatalf("dev down: %v", err)
	}
	if _, err := os.Stat(c.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the cluster's folder %s is still there (stat: %v)", c.Dir, err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	// A killed process's threads close its sockets a moment after /proc
	// shows it a zombie, which Delete counts as gone.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver at %s still answers 10s after dev down", u.Host)
		}
	}
	if err := devDown(ctx, devcluster.Options{Name: "dev-down", WorkDir: work}); err == nil {
		t.Error("a second dev down found a cluster to remove")
	}
}

// A second dev up (or one after a crash left the cluster's folder) said
// "file already exists: ... is in the way"; it must say that a cluster is
// up and that dev down removes it.
func TestDevUpOverAClusterSaysSo(t *testing.T) {
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "clusters", "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := devUp(context.Background(), devcluster.Options{Name: "in-the-way", WorkDir: work}, nil)
	if err == nil {
		t.Fatal("dev up over a cluster's folder succeeded")
	}
	for _, want := range []string{`local cluster "in-the-way" is already up`, "nodewright dev down"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// dev up said "the first run builds them ... about 13 minutes" on every run;
// now hack/kube-binaries.sh says it only when it builds. A go that fails
// stops the build right after the notice, so the test builds nothing.
func TestKubeBinariesSayTheyBuildOnlyWhenTheyDo(t *testing.T) {
	root, err := kubebin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cache, fakeBin := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(fakeBin, "go"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func() (string, string, error) {
		cmd := exec.Command("bash", filepath.Join(root, "hack", "kube-binaries.sh"))
		cmd.Env = append(os.Environ(), "NODEWRIGHT_CACHE="+cache, "PATH="+fakeBin+string(os.PathListSeparator)+os.Getenv("PATH"))
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return strings.TrimSpace(out.String()), errOut.String(), err
	}
	const notice = "about 13 minutes"

	_, stderr, err := run()
	if err == nil || !strings.Contains(stderr, notice) {
		t.Fatalf("nothing built: err %v, stderr %q; want the build to start, say %q, and fail", err, stderr, notice)
	}
	// The script made the folder it builds into; the only one in the cache.
	dirs, err := filepath.Glob(filepath.Join(cache, "kube-binaries", "*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("build folders %v (%v); want one", dirs, err)
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubectl", "kwok", "kwokctl"} {
		if err := os.WriteFile(filepath.Join(dirs[0], b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, err := run()
	if err != nil || stdout != dirs[0] || stderr != "" {
		t.Errorf("all built: err %v, stdout %q, stderr %q; want %s and nothing on stderr", err, stdout, stderr, dirs[0])
	}
}

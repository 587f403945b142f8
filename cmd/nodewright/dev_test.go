package main

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"os"
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

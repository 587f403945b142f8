// Package testcluster starts a real kube-apiserver and etcd, built by
// hack/kube-binaries.sh, with nodewright's CRDs installed: the ground every
// controller test stands on. Use Main from a package's TestMain to share one
// API server across the package's tests.
package testcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// BinariesEnv, when set, names the folder that holds the binaries and skips the
// build script (make test sets it once for all packages).
const BinariesEnv = "NODEWRIGHT_KUBE_BINARIES"

var (
	binariesOnce sync.Once
	binariesDir  string
	binariesErr  error
)

// Binaries returns the folder holding etcd, kube-apiserver, kube-scheduler,
// kube-controller-manager, kubectl, kwok and kwokctl, building them if missing.
func Binaries() (string, error) {
	binariesOnce.Do(func() {
		if d := os.Getenv(BinariesEnv); d != "" {
			binariesDir = d
			return
		}
		root, err := RepoRoot()
		if err != nil {
			binariesErr = err
			return
		}
		cmd := exec.Command("bash", filepath.Join(root, "hack", "kube-binaries.sh"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		if err := cmd.Run(); err != nil {
			binariesErr = fmt.Errorf("building Kubernetes binaries with hack/kube-binaries.sh: %w", err)
			return
		}
		binariesDir = strings.TrimSpace(out.String())
	})
	return binariesDir, binariesErr
}

// RepoRoot finds the nodewright module's root from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/nodewright/nodewright\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the nodewright module: no go.mod found above the working directory")
		}
		dir = parent
	}
}

// CompatDirEnv overrides where Karpenter's compatibility data lives.
const CompatDirEnv = "NODEWRIGHT_COMPAT_DIR"

// CompatDir is the folder of Karpenter's CRDs and example manifests that tests
// check compatibility against: shared/compat beside the repository, as CI and
// developers have it, unless NODEWRIGHT_COMPAT_DIR says otherwise.
func CompatDir() (string, error) {
	if d := os.Getenv(CompatDirEnv); d != "" {
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	d := filepath.Join(filepath.Dir(root), "shared", "compat")
	if _, err := os.Stat(d); err != nil {
		return "", fmt.Errorf("Karpenter compatibility data not found at %s (set %s): %w", d, CompatDirEnv, err)
	}
	return d, nil
}

// Package kubebin finds the Kubernetes binaries nodewright runs (etcd,
// kube-apiserver, kube-scheduler, kube-controller-manager, kubectl, kwok and
// kwokctl), building them from the Go module proxy with
// hack/kube-binaries.sh the first time. Tests and `nodewright dev` share it,
// so both run exactly the same pinned versions.
package kubebin

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

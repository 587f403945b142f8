// Package testcluster starts a real kube-apiserver and etcd, built by
// hack/kube-binaries.sh, with nodewright's CRDs installed: the ground every
// controller test stands on. Use Main from a package's TestMain to share one
// API server across the package's tests.
package testcluster

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/nodewright/nodewright/internal/kubebin"
)

// BinariesEnv, when set, names the folder that holds the binaries.
const BinariesEnv = kubebin.BinariesEnv

// Binaries returns the folder holding the Kubernetes binaries, building them
// if missing.
func Binaries() (string, error) { return kubebin.Binaries() }

// RepoRoot finds the nodewright module's root from the working directory.
func RepoRoot() (string, error) { return kubebin.RepoRoot() }

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

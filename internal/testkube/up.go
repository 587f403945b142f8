package testkube

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/nodewright/nodewright/internal/devcluster"
	"github.com/nodewright/nodewright/internal/devenv"
	"github.com/nodewright/nodewright/internal/kubebin"
)

// Up builds `nodewright` from this tree and starts a local cluster named
// prefix-<pid> for it (the controller is started separately). down stops
// the cluster and removes the work directory.
func Up(ctx context.Context, prefix string) (env *devenv.Env, down func(), err error) {
	bins, err := kubebin.Binaries()
	if err != nil {
		return nil, nil, err
	}
	root, err := kubebin.RepoRoot()
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "nodewright-"+prefix+"-")
	if err != nil {
		return nil, nil, err
	}
	binary := filepath.Join(tmp, "nodewright")
	build := exec.Command("go", "build", "-o", binary, "./cmd/nodewright")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(tmp)
		return nil, nil, fmt.Errorf("building nodewright: %w", err)
	}
	env, err = devenv.Up(ctx, devcluster.Options{
		Name:        fmt.Sprintf("nw-%s-%d", prefix, os.Getpid()),
		BinariesDir: bins,
		WorkDir:     filepath.Join(tmp, "kwok"),
		Ephemeral:   true,
		Log:         os.Stderr,
	}, binary)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, fmt.Errorf("starting the local cluster: %w", err)
	}
	return env, func() {
		_ = env.Down(context.Background())
		os.RemoveAll(tmp)
	}, nil
}

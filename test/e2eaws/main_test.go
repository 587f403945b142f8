// Package e2eaws runs nodewright with its AWS provider end to end: a full
// local control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok), the controller as its own process with
// --cloud-provider=aws, and EC2, SSM, IAM and SQS from moto_server on
// loopback behind the test front (internal/testaws). moto launches no
// machines, so a harness plays the kubelet: for each instance launched for
// a NodeClaim it registers a Node with the instance's provider ID, which
// kwok then runs pods on; and it deletes the Node of an instance that is
// gone, as the cloud controller manager would.
package e2eaws

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/internal/devcluster"
	"github.com/nodewright/nodewright/internal/devenv"
	"github.com/nodewright/nodewright/internal/kubebin"
	"github.com/nodewright/nodewright/internal/operator"
)

var (
	env *devenv.Env
	kc  client.Client
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx := context.Background()
	bins, err := kubebin.Binaries()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2eaws:", err)
		return 1
	}
	root, err := kubebin.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2eaws:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "nodewright-e2eaws-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2eaws:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	binary := filepath.Join(tmp, "nodewright")
	build := exec.Command("go", "build", "-o", binary, "./cmd/nodewright")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2eaws: building nodewright:", err)
		return 1
	}
	env, err = devenv.Up(ctx, devcluster.Options{
		Name:        fmt.Sprintf("nw-e2eaws-%d", os.Getpid()),
		BinariesDir: bins,
		WorkDir:     filepath.Join(tmp, "kwok"),
		Ephemeral:   true,
		Log:         os.Stderr,
	}, binary)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2eaws: starting the local cluster:", err)
		return 1
	}
	defer func() { _ = env.Down(context.Background()) }()
	kc, err = client.New(env.Config, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2eaws:", err)
		return 1
	}
	code := m.Run()
	b, err := os.ReadFile(env.ControllerLog())
	if err == nil {
		keep := filepath.Join(os.TempDir(), "nodewright-e2eaws-controller.log")
		if os.WriteFile(keep, b, 0o644) == nil {
			fmt.Fprintln(os.Stderr, "e2eaws: the whole controller log is kept at", keep)
		}
	}
	if code != 0 {
		env.Cluster.DumpLogs(os.Stderr, 40)
	}
	return code
}

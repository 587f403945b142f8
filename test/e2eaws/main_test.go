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
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/internal/devenv"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/testkube"
)

var (
	env *devenv.Env
	kc  client.Client
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var down func()
	var err error
	env, down, err = testkube.Up(context.Background(), "e2eaws")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2eaws:", err)
		return 1
	}
	defer down()
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

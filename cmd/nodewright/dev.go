package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/devcluster"
	"github.com/nodewright/nodewright/internal/devenv"
	"github.com/nodewright/nodewright/internal/kubebin"
)

const devClusterName = "nodewright"

func devCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "dev", Short: "A local cluster to try nodewright on (kwok nodes, real control plane)"}
	var controllerArgs []string
	up := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster with the CRDs installed and the controller running",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := devUp(cmd.Context(), devcluster.Options{Name: devClusterName}, controllerArgs)
			if err != nil {
				return err
			}
			fmt.Printf("\nnodewright is running on a local cluster.\n  export KUBECONFIG=%s\n  controller logs: %s\n  stop it all with: nodewright dev down\n",
				env.Cluster.Kubeconfig, env.ControllerLog())
			return nil
		},
	}
	up.Flags().StringArrayVar(&controllerArgs, "controller-arg", nil, "extra `ARG` for 'nodewright controller' (repeatable), e.g. --controller-arg=--kwok-registration-delay=5s")
	down := &cobra.Command{
		Use:   "down",
		Short: "Stop the controller and delete the local cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := devDown(cmd.Context(), devcluster.Options{Name: devClusterName}); err != nil {
				return err
			}
			fmt.Println("local cluster removed")
			return nil
		},
	}
	demo := &cobra.Command{
		Use:   "demo",
		Short: "dev up, a NodePool and a Deployment that scales up then down, printing nodes and pods as they change, then dev down",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd, controllerArgs)
		},
	}
	demo.Flags().StringArrayVar(&controllerArgs, "controller-arg", nil, "extra `ARG` for 'nodewright controller' (repeatable)")
	cmd.AddCommand(up, down, demo)
	return cmd
}

func devUp(ctx context.Context, opts devcluster.Options, controllerArgs []string) (*devenv.Env, error) {
	// hack/kube-binaries.sh says so on stderr when it builds (about 13
	// minutes); found built, as they mostly are, they need no line here.
	bin, err := kubebin.Binaries()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	opts.BinariesDir = bin
	fmt.Println("starting a local cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)...")
	env, err := devenv.Up(ctx, opts, self)
	if errors.Is(err, fs.ErrExist) {
		return nil, alreadyUp(opts)
	}
	if err != nil {
		return nil, err
	}
	env.ControllerArgs = append([]string{"--metrics-bind-address=127.0.0.1:18080", "--health-probe-bind-address=127.0.0.1:18081"}, controllerArgs...)
	if err := env.StartController(); err != nil {
		_ = env.Down(ctx)
		return nil, err
	}
	return env, nil
}

// alreadyUp says what to do when dev up finds the cluster's folder: it was
// left by a dev up before (running, or killed with its machine).
func alreadyUp(opts devcluster.Options) error {
	where := ""
	if env, err := devenv.Open(opts, ""); err == nil {
		where = fmt.Sprintf(" (export KUBECONFIG=%s to use it)", env.Cluster.Kubeconfig)
	}
	return fmt.Errorf("a local cluster %q is already up, or was left by an earlier dev up%s; run 'nodewright dev down' first to start afresh", opts.Name, where)
}

// devDown stops the controller of the local cluster opts names and deletes
// the cluster. Deleting runs kwokctl, so it finds the binaries as dev up does
// (already built: that takes no time).
func devDown(ctx context.Context, opts devcluster.Options) error {
	bin, err := kubebin.Binaries()
	if err != nil {
		return err
	}
	opts.BinariesDir = bin
	env, err := devenv.Open(opts, "")
	if err != nil {
		return fmt.Errorf("no local cluster to remove: %w", err)
	}
	_ = env.KillController(syscall.SIGTERM)
	return env.Cluster.Delete(ctx)
}

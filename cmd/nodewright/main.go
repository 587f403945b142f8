// Command nodewright is the nodewright node autoscaler: the controller that
// runs in a cluster, and the tools around it (a local cluster to try it on).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{
		Use:           "nodewright",
		Short:         "A Kubernetes node autoscaler that speaks Karpenter's karpenter.sh/v1 API",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(catalogCommand(), controllerCommand(), devCommand(), explainCommand(), simulateCommand())
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "nodewright:", err)
		os.Exit(1)
	}
}

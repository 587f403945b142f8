// Command nodewright is the nodewright node autoscaler: the controller that
// runs in a cluster, and the tools around it (a local cluster to try it on).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := rootCommand()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "nodewright:", err)
		os.Exit(1)
	}
}

// Package e2e runs nodewright end to end on a full local control plane:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok,
// started by kwokctl's binary runtime, with the controller as its own
// process built from this tree. kube-scheduler, not the test, binds every
// pod; kwok runs them. Each test has its own NodePool, so tests run in
// parallel, except the one that kills the controller.
package e2e

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
	// allClaims records every NodeClaim of the run.
	allClaims *claimRecorder
)

// controllerArgs shorten the controller's timers so tests run in minutes.
var controllerArgs = []string{
	"--metrics-bind-address=0", "--health-probe-bind-address=0",
	"--leader-lease-duration=4s", "--leader-renew-deadline=3s", "--leader-retry-period=500ms",
	"--gc-interval=5s", "--disruption-interval=2s", "--log-level=info",
	"--spot-to-spot-consolidation",
	// The kwok catalog has few types cheaper than a small node; Karpenter's
	// guard of 15 would keep every spot node of TestSpotToSpotConsolidation.
	"--spot-to-spot-min-instance-types=3",
	// Node repair after seconds, not Karpenter's 30 minutes (repair_test.go).
	"--kwok-repair-toleration=" + repairToleration.String(),
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var down func()
	var err error
	env, down, err = testkube.Up(context.Background(), "e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer down()
	kc, err = client.New(env.Config, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// Multi-node consolidation may replace nodes of several NodePools by
	// one node of another, so a test looks up replacements among all claims.
	allClaims = recordClaims("")
	env.ControllerArgs = append(controllerArgs, probeFlag())
	if err := env.StartController(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	code := m.Run()
	// Kept whatever the outcome: a run that passed is the one to compare
	// a failing one with.
	b, err := os.ReadFile(env.ControllerLog())
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: reading the controller log:", err)
	} else if keep := filepath.Join(os.TempDir(), "nodewright-e2e-controller.log"); os.WriteFile(keep, b, 0o644) == nil {
		fmt.Fprintln(os.Stderr, "e2e: the whole controller log is kept at", keep)
	}
	if code != 0 {
		dumpControllerLog(b, 200)
		env.Cluster.DumpLogs(os.Stderr, 40)
	}
	return code
}

// dumpControllerLog prints the last lines of the controller log b.
func dumpControllerLog(b []byte, lines int) {
	all := splitLines(b)
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	fmt.Fprintf(os.Stderr, "---- last %d lines of the controller log ----\n", len(all))
	for _, l := range all {
		fmt.Fprintln(os.Stderr, l)
	}
}

func splitLines(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	if start < len(b) {
		out = append(out, string(b[start:]))
	}
	return out
}

// Command profiled is `nodewright controller` with Go's profiler served on
// --pprof-bind-address, for BenchmarkScale40k (NODEWRIGHT_SCALE_PPROF=1):
// the same operator.Run, so the profiles are those of the real controller.
// It takes only the flags the benchmark passes, with the same names and
// defaults as `nodewright controller`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	_ "net/http/pprof" // the profiler, on http.DefaultServeMux
	"os"
	"os/signal"
	"syscall"

	uzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nodewright/nodewright/internal/operator"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "profiled:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 || os.Args[1] != "controller" {
		return errors.New("usage: profiled controller [flags]")
	}
	o := operator.DefaultOptions()
	fl := flag.NewFlagSet("controller", flag.ContinueOnError)
	fl.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file")
	fl.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "metrics endpoint address; 0 disables it")
	fl.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "probe address; 0 disables them")
	qps := fl.Float64("kube-api-qps", float64(o.KubeAPIQPS), "steady requests per second to the API server")
	fl.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "request burst to the API server")
	fl.DurationVar(&o.Provisioning.BatchIdle, "batch-idle-duration", o.Provisioning.BatchIdle, "batch idle window")
	fl.DurationVar(&o.Provisioning.BatchMax, "batch-max-duration", o.Provisioning.BatchMax, "batch maximum window")
	fl.DurationVar(&o.Provisioning.EarlyLaunch, "early-launch-interval", o.Provisioning.EarlyLaunch, "early pass interval; 0 disables")
	fl.Float64Var(&o.Provisioning.EarlyFill, "early-launch-fill", o.Provisioning.EarlyFill, "fill an early-launched NodeClaim needs")
	fl.DurationVar(&o.Provisioning.UntriedAfter, "provision-untried-pods-after", o.Provisioning.UntriedAfter, "also plan pods kube-scheduler has not tried this long after creation")
	fl.DurationVar(&o.Provisioning.NominationGrace, "nomination-grace", o.Provisioning.NominationGrace, "nomination grace after initialization")
	level := fl.String("log-level", "info", "debug, info or error")
	pprofAddr := fl.String("pprof-bind-address", "127.0.0.1:6060", "address of net/http/pprof")
	if err := fl.Parse(os.Args[2:]); err != nil {
		return err
	}
	o.KubeAPIQPS = float32(*qps)

	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level %q: %w", *level, err)
	}
	logger := zap.New(zap.Level(uzap.NewAtomicLevelAt(lvl)), zap.UseDevMode(false), zap.JSONEncoder(func(c *zapcore.EncoderConfig) {
		c.TimeKey = "time"
		c.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	}))
	ctrl.SetLogger(logger)

	go func() {
		if err := http.ListenAndServe(*pprofAddr, nil); err != nil {
			logger.Error(err, "serving pprof")
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return operator.Run(log.IntoContext(ctx, logger), o)
}

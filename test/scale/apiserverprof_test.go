package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
)

// apiserverProfileLoop saves consecutive 30-second CPU profiles of
// kube-apiserver (its /debug/pprof, on by default, through the admin
// client) as <prefix>-cpu-NNN.pb.gz in dir, until done closes. Profiles of
// a run and of the ideal, merged and compared with `go tool pprof
// -diff_base`, say where the run's extra kube-apiserver CPU goes when its
// request counts do not.
func apiserverProfileLoop(ctx context.Context, cs kubernetes.Interface, dir, prefix string, done <-chan struct{}) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		logf("profiling kube-apiserver: %v", err)
		return
	}
	for i := 1; ; i++ {
		if stopped(ctx, done) {
			return
		}
		data, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "30").
			Timeout(2 * time.Minute).DoRaw(ctx)
		if err != nil {
			logf("profiling kube-apiserver: %v", err)
			return
		}
		name := filepath.Join(dir, fmt.Sprintf("%s-cpu-%03d.pb.gz", prefix, i))
		if err := os.WriteFile(name, data, 0o644); err != nil {
			logf("profiling kube-apiserver: %v", err)
			return
		}
		logf("profiling kube-apiserver: saved %s", name)
	}
}

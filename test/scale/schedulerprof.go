package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// schedulerPprofPaths is what NODEWRIGHT_SCALE_SCHEDULER_PPROF has
// kube-scheduler let through without credentials: kwokctl's own list and
// /debug/pprof. kube-scheduler checks every other path with kube-apiserver,
// which the benchmark's clusters leave to kwokctl's defaults.
const schedulerPprofPaths = "authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/*"

// schedulerProfileLoop saves, until done closes, a goroutine dump of
// kube-scheduler (<prefix>-goroutines-NNN.txt) and then a 10-second CPU
// profile (<prefix>-cpu-NNN.pb.gz) in dir, again and again, and logs how
// many of its goroutines bind a pod or shake hands with kube-apiserver
// at each dump. port is kube-scheduler's secure port on the loopback; its
// certificate is self-signed.
func schedulerProfileLoop(ctx context.Context, port int, dir, prefix string, done <-chan struct{}) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		logf("profiling kube-scheduler: %v", err)
		return
	}
	get := func(path string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return schedulerGet(ctx, port, path)
	}
	save := func(name string, data []byte) bool {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			logf("profiling kube-scheduler: %v", err)
			return false
		}
		return true
	}
	for i := 1; ; i++ {
		if stopped(ctx, done) {
			return
		}
		dump, err := get("/debug/pprof/goroutine?debug=1")
		if err != nil {
			logf("profiling kube-scheduler: %v", err)
			return
		}
		name := fmt.Sprintf("%s-goroutines-%03d.txt", prefix, i)
		if !save(name, dump) {
			return
		}
		logf("kube-scheduler %s (%s)", summarizeGoroutines(string(dump)), name)
		prof, err := get("/debug/pprof/profile?seconds=10")
		if err != nil {
			logf("profiling kube-scheduler: %v", err)
			return
		}
		if !save(fmt.Sprintf("%s-cpu-%03d.pb.gz", prefix, i), prof) {
			return
		}
	}
}

// goroutineGroup is the header of one group of a debug=1 goroutine dump:
// how many goroutines share the stack that follows.
var goroutineGroup = regexp.MustCompile(`(?m)^(\d+) @`)

// goroutineTotal is a debug=1 dump's first line.
var goroutineTotal = regexp.MustCompile(`^goroutine profile: total (\d+)`)

// summarizeGoroutines counts, in a debug=1 goroutine dump, all goroutines,
// those binding a pod (waiting for kube-apiserver to answer the POST, as a
// rule), those in a TLS client handshake, and those dialing a connection
// before it.
func summarizeGoroutines(dump string) string {
	total, binding, handshake, dialing := 0, 0, 0, 0
	locs := goroutineGroup.FindAllStringSubmatchIndex(dump, -1)
	for i, loc := range locs {
		n, _ := strconv.Atoi(dump[loc[2]:loc[3]])
		end := len(dump)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		stack := dump[loc[0]:end]
		total += n
		switch {
		case strings.Contains(stack, "pods).Bind"):
			binding += n
		case strings.Contains(stack, "clientHandshake"):
			handshake += n
		case strings.Contains(stack, "dialConn"):
			dialing += n
		}
	}
	if m := goroutineTotal.FindStringSubmatch(dump); m != nil {
		total, _ = strconv.Atoi(m[1]) // the header's, should the groups be cut short
	}
	return fmt.Sprintf("goroutines %d: binding a pod %d, in a TLS handshake %d, dialing %d", total, binding, handshake, dialing)
}

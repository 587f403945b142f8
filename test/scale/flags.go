package scale

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/nodewright/nodewright/internal/devcluster"
)

// checkFlags fails unless the cluster's process of component (one of
// devcluster's Component names) runs with each of flags ("name=value"):
// figures labelled as taken with a flag must have been.
func checkFlags(comps map[string]int, component string, flags []string) error {
	if len(flags) == 0 {
		return nil
	}
	pid, ok := comps[component]
	if !ok {
		return fmt.Errorf("%s's pid is unknown; cannot check its flags %s", component, strings.Join(flags, " "))
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return fmt.Errorf("reading %s's flags: %w", component, err)
	}
	var args []string
	for _, a := range bytes.Split(bytes.TrimRight(data, "\x00"), []byte{0}) {
		args = append(args, string(a))
	}
	if missing := missingFlags(args, flags); len(missing) > 0 {
		return fmt.Errorf("%s does not run with %s (its arguments: %s)", component, strings.Join(missing, " "), strings.Join(args, " "))
	}
	return nil
}

// checkClusterFlags checks the benchmark's extra kube-apiserver and
// kube-scheduler flags (NODEWRIGHT_SCALE_APISERVER_FLAGS and _SCHEDULER_FLAGS).
func checkClusterFlags(comps map[string]int, apiServer, scheduler []string) error {
	if err := checkFlags(comps, devcluster.ComponentKubeAPIServer, apiServer); err != nil {
		return err
	}
	return checkFlags(comps, devcluster.ComponentKubeScheduler, scheduler)
}

// missingFlags returns the flags ("name=value", dashes optional) that args
// do not end up setting: pflag takes the last of a repeated flag.
func missingFlags(args, flags []string) []string {
	last := map[string]string{}
	for _, a := range args {
		if name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "="); ok && strings.HasPrefix(a, "-") {
			last[name] = value
		}
	}
	var out []string
	for _, f := range flags {
		name, value, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if v, ok := last[name]; !ok || v != value {
			out = append(out, f)
		}
	}
	return out
}

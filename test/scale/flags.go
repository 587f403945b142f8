package scale

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/nodewright/nodewright/internal/devcluster"
)

// checkAPIServerFlags fails unless the cluster's kube-apiserver process
// runs with each of flags ("name=value"): figures labelled as taken with a
// flag must have been.
func checkAPIServerFlags(comps map[string]int, flags []string) error {
	if len(flags) == 0 {
		return nil
	}
	pid, ok := comps[devcluster.ComponentKubeAPIServer]
	if !ok {
		return fmt.Errorf("kube-apiserver's pid is unknown; cannot check its flags %s", strings.Join(flags, " "))
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return fmt.Errorf("reading kube-apiserver's flags: %w", err)
	}
	var args []string
	for _, a := range bytes.Split(bytes.TrimRight(data, "\x00"), []byte{0}) {
		args = append(args, string(a))
	}
	if missing := missingFlags(args, flags); len(missing) > 0 {
		return fmt.Errorf("kube-apiserver does not run with %s (its arguments: %s)", strings.Join(missing, " "), strings.Join(args, " "))
	}
	return nil
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

package livecluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Target is the cluster a kubeconfig points at.
type Target struct {
	// Context is the kubeconfig context used.
	Context string
	// Server is the API server's address.
	Server string
	Config *rest.Config
}

// String names the cluster for people, where a file name would go.
func (t Target) String() string {
	return fmt.Sprintf("cluster %s (%s)", t.Context, t.Server)
}

// Find loads the kubeconfig at path, or, when path is "", the files of
// $KUBECONFIG or ~/.kube/config as kubectl does, and picks context ("" is
// the current one).
func Find(path, context string) (Target, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return Target{}, fmt.Errorf("--kubeconfig %s: %w; give the path of a kubeconfig file", path, errors.Unwrap(err))
		}
	} else if !anyExists(rules.Precedence) {
		return Target{}, fmt.Errorf("no kubeconfig found: %s; pass --kubeconfig PATH or set $KUBECONFIG", where(rules.Precedence))
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	raw, err := loader.RawConfig()
	if err != nil {
		return Target{}, fmt.Errorf("reading kubeconfig: %w", err)
	}
	name := context
	if name == "" {
		name = raw.CurrentContext
	}
	if name == "" {
		return Target{}, fmt.Errorf("the kubeconfig sets no current context; pass --context NAME (one of: %s)", contexts(raw.Contexts))
	}
	if _, ok := raw.Contexts[name]; !ok {
		return Target{}, fmt.Errorf("context %q is not in the kubeconfig; pass --context with one of: %s", name, contexts(raw.Contexts))
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return Target{}, fmt.Errorf("kubeconfig context %s: %w", name, err)
	}
	return Target{Context: name, Server: cfg.Host, Config: cfg}, nil
}

// Connect finds the cluster as Find does and returns a client for it that
// knows the types of scheme (nil: Kubernetes' own; Read needs no more).
func Connect(path, context string, scheme *runtime.Scheme) (client.Client, Target, error) {
	t, err := Find(path, context)
	if err != nil {
		return nil, t, err
	}
	cfg := rest.CopyConfig(t.Config)
	if cfg.Timeout == 0 {
		// A hung API server should end in an error, not a hung command.
		cfg.Timeout = time.Minute
	}
	// Listing a large cluster page by page outruns client-go's default of
	// 5 requests a second.
	cfg.QPS, cfg.Burst = 50, 100
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, t, fmt.Errorf("connecting to %s: %w", t, err)
	}
	return c, t, nil
}

func anyExists(paths []string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// where says where kubectl's rules looked for a kubeconfig.
func where(looked []string) string {
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		return fmt.Sprintf("$%s names %s, and none of it exists", clientcmd.RecommendedConfigPathEnvVar, strings.Join(filepath.SplitList(env), ", "))
	}
	return fmt.Sprintf("$%s is not set and %s does not exist", clientcmd.RecommendedConfigPathEnvVar, strings.Join(looked, ", "))
}

func contexts[T any](m map[string]T) string {
	if len(m) == 0 {
		return "none defined"
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

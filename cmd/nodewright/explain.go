package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/catalog"
	"github.com/nodewright/nodewright/internal/explain"
	"github.com/nodewright/nodewright/internal/livecluster"
	"github.com/nodewright/nodewright/internal/operator"
)

// explainFlags are shared by explain pod and explain node.
type explainFlags struct {
	files      []string
	kubeconfig string
	context    string
	catalogs   catalogFlags
	namespace  string // of the learned-capacity ConfigMap
	now        string
	output     string
}

func explainCommand() *cobra.Command {
	f := &explainFlags{}
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Say why a pod fits where it fits, or why a node is or is not disrupted",
		Long: `explain asks the solver and the disruption planner, the code the controller runs,
about one pod or one node, against a live cluster (kubeconfig) or offline
against manifests (-f). See docs/explain.md.`,
	}
	fl := cmd.PersistentFlags()
	fl.StringArrayVarP(&f.files, "filename", "f", nil, "explain offline: manifest files or directories (repeatable) instead of a live cluster")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; empty means $KUBECONFIG or ~/.kube/config")
	fl.StringVar(&f.context, "context", "", "kubeconfig context; empty means the current one")
	f.catalogs.register(fl)
	fl.StringVar(&f.namespace, "controller-namespace", operator.DefaultOptions().Namespace, "live: namespace of the controller's learned-capacity ConfigMap")
	fl.StringVar(&f.now, "now", "", "judge at this instant (RFC 3339), for reproducible offline answers; empty is now")
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	var namespace string
	pod := &cobra.Command{
		Use:   "pod NAME",
		Short: "Why a pod fits or does not fit each NodePool and instance type, and what would be launched for it",
		Args:  cobra.ExactArgs(1),
		RunE: f.run(func(in explain.Input, name string) (any, func(io.Writer) error, error) {
			ex, err := explain.Pod(in, namespace, name)
			if err != nil {
				return nil, nil, err
			}
			return ex, ex.WriteText, nil
		}),
	}
	pod.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace of the pod")
	node := &cobra.Command{
		Use:   "node NAME",
		Short: "Why a node (or NodeClaim) is or is not being disrupted",
		Args:  cobra.ExactArgs(1),
		RunE: f.run(func(in explain.Input, name string) (any, func(io.Writer) error, error) {
			ex, err := explain.Node(in, name)
			if err != nil {
				return nil, nil, err
			}
			return ex, func(w io.Writer) error { return ex.WriteText(w, in.Now) }, nil
		}),
	}
	cmd.AddCommand(pod, node)
	return cmd
}

// input reads the cluster, live or from manifests, and resolves each
// NodePool's instance types as the controller would.
func (f *explainFlags) input(ctx context.Context, stderr io.Writer) (explain.Input, time.Time, error) {
	now := time.Now()
	if f.now != "" {
		t, err := time.Parse(time.RFC3339, f.now)
		if err != nil {
			return explain.Input{}, now, fmt.Errorf("--now %q: give an RFC 3339 time such as 2026-11-23T12:00:00Z", f.now)
		}
		now = t
	}
	kwokCat, awsCat, err := f.catalogs.load()
	if err != nil {
		return explain.Input{}, now, err
	}
	if len(f.files) > 0 {
		in, err := offlineInput(ctx, f.files, kwokCat, awsCat, stderr)
		return in, now, err
	}
	in, err := f.liveInput(ctx, kwokCat)
	return in, now, err
}

func offlineInput(ctx context.Context, files []string, kwokCat, awsCat *catalog.Catalog, stderr io.Writer) (explain.Input, error) {
	in, problems, err := explain.Offline(ctx, files, kwokCat, awsCat)
	for _, p := range problems {
		fmt.Fprintln(stderr, "warning:", p.String())
	}
	if in.AWSRegion != "" {
		// On stderr, so that the answer on stdout stays as it is; the user
		// did not name this region and must hear which it is.
		fmt.Fprintln(stderr, "region:", in.AWSRegion)
	}
	return in, err
}

// liveInput connects with the kubeconfig and reads the cluster.
func (f *explainFlags) liveInput(ctx context.Context, catalog *catalog.Catalog) (explain.Input, error) {
	c, _, err := livecluster.Connect(f.kubeconfig, f.context, operator.Scheme())
	if err != nil {
		return explain.Input{}, fmt.Errorf("%w; or explain offline with -f", err)
	}
	return explain.Live(ctx, c, catalog, f.namespace)
}

// run reads the input, explains args[0] with do, and writes the answer in
// the chosen format.
func (f *explainFlags) run(do func(in explain.Input, name string) (any, func(io.Writer) error, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		in, now, err := f.input(cmd.Context(), cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		in.Now = now
		v, text, err := do(in, args[0])
		if err != nil {
			return err
		}
		return f.write(cmd.OutOrStdout(), v, text)
	}
}

func (f *explainFlags) write(w io.Writer, v any, text func(io.Writer) error) error {
	switch f.output {
	case "text":
		return text(w)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return fmt.Errorf("--output %q: use text or json", f.output)
}

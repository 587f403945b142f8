package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/nodewright/nodewright/internal/livecluster"
	"github.com/nodewright/nodewright/internal/manifests"
	"github.com/nodewright/nodewright/internal/report"
	"github.com/nodewright/nodewright/internal/simulate"
)

// simulateFlags are simulate's inputs and outputs.
type simulateFlags struct {
	files       []string
	fromCluster bool
	kubeconfig  string
	context     string
	timeline    string
	catalogs    catalogFlags
	output      string
	reportFile  string
}

func simulateCommand() *cobra.Command {
	f := &simulateFlags{}
	cmd := &cobra.Command{
		Use:   "simulate (-f PATH [-f PATH...] | --from-cluster [--kubeconfig FILE] [--context NAME] [-f PATH...]) [--timeline FILE] [--catalog FILE | --region R] [-o text|json] [--report FILE.html]",
		Short: "What would nodewright do with these manifests? Runs the controller's solver and disruption planner on a virtual clock",
		Long: `simulate reads Kubernetes manifests (NodePools, EC2NodeClasses, KWOKNodeClasses, workloads, nodes, pods, ...) as
kubectl get -o yaml prints them, and runs nodewright's own provisioning and disruption logic over
them on a virtual clock, following an optional timeline of changes. See docs/simulate.md.

With --from-cluster it starts from a live cluster's objects instead, read (never written) with the
kubeconfig, exactly as from a kubectl get -o yaml dump of them. Manifests given with -f are added on
top: an object in a file replaces the cluster's object of the same kind, namespace and name.`,
		Args: manifestsByFlag,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.files, "filename", "f", nil, "manifest file or directory (repeatable); directories are read recursively for *.yaml, *.yml, *.json")
	fl.BoolVar(&f.fromCluster, "from-cluster", false, "start from the objects of the cluster the kubeconfig points at (read only); -f files replace or add objects")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "with --from-cluster: kubeconfig file; empty means $KUBECONFIG or ~/.kube/config")
	fl.StringVar(&f.context, "context", "", "with --from-cluster: kubeconfig context; empty means the current one")
	fl.StringVar(&f.timeline, "timeline", "", "timeline file: what happens during the run (docs/simulate.md); default: one quiet hour")
	f.catalogs.register(fl)
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json (schema "+simulate.Schema+")")
	fl.StringVar(&f.reportFile, "report", "", "also write an HTML report with charts to this file")
	return cmd
}

// manifestsByFlag refuses arguments; a path given as one (a common slip,
// as with kubectl apply) is answered with the -f it needs.
func manifestsByFlag(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if _, err := os.Stat(args[0]); err == nil || strings.ContainsAny(args[0], "./") {
		return fmt.Errorf("%s takes manifests with -f, not as arguments: nodewright %s -f %s", cmd.Name(), cmd.Name(), strings.Join(args, " -f "))
	}
	return fmt.Errorf("unknown argument %q for %q: it takes no arguments (manifests go with -f)", args[0], cmd.CommandPath())
}

func (f *simulateFlags) run(cmd *cobra.Command) error {
	if len(f.files) == 0 && !f.fromCluster {
		return fmt.Errorf("no manifests: pass -f with a file or directory of NodePools, KWOKNodeClasses and workloads, or --from-cluster")
	}
	if !f.fromCluster && (f.kubeconfig != "" || f.context != "") {
		return fmt.Errorf("--kubeconfig and --context choose the cluster of --from-cluster; add --from-cluster, or drop them to simulate the files alone")
	}
	if f.output != "text" && f.output != "json" {
		return fmt.Errorf("-o %s: choose text or json", f.output)
	}
	set, problems, cluster, err := f.load(cmd.Context(), cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	opts := simulate.Options{}
	var named []string
	if cluster != "" {
		named = []string{cluster}
	}
	named = append(named, f.files...)
	if f.timeline != "" {
		tl, err := simulate.ReadTimeline(f.timeline)
		if err != nil {
			return err
		}
		opts.Timeline = tl
	}
	kwokCat, awsCat, err := f.catalogs.load()
	if err != nil {
		return err
	}
	opts.Catalog, opts.AWSCatalog = kwokCat, awsCat
	if fd := int(os.Stderr.Fd()); term.IsTerminal(fd) {
		opts.Progress = simulate.ProgressBar(os.Stderr)
	}
	engine, err := simulate.New(set, opts)
	if err != nil {
		return err
	}
	res, err := engine.Run(cmd.Context())
	if err != nil {
		return err
	}
	res.Inputs = simulate.Inputs(cluster, set, f.timeline, f.catalogs.file)
	res.Skipped = simulate.SkippedFrom(problems)
	if f.reportFile != "" {
		var buf bytes.Buffer
		if err := report.WriteHTML(&buf, res.Report("nodewright simulate: "+strings.Join(named, ", "))); err != nil {
			return err
		}
		if err := os.WriteFile(f.reportFile, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--report: %w", err)
		}
	}
	if f.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	_, err = fmt.Fprint(cmd.OutOrStdout(), res.Text())
	return err
}

// load reads the starting state: the live cluster's objects with
// --from-cluster, then the files on top. cluster names the cluster read,
// "" for none.
func (f *simulateFlags) load(ctx context.Context, stderr io.Writer) (set *manifests.Set, problems []manifests.Problem, cluster string, err error) {
	var (
		base     manifests.Base
		unserved []string
	)
	if f.fromCluster {
		c, target, err := livecluster.Connect(f.kubeconfig, f.context, nil)
		if err != nil {
			return nil, nil, "", fmt.Errorf("--from-cluster: %w", err)
		}
		objs, err := livecluster.Read(ctx, c, target, manifests.Kinds())
		if err != nil {
			return nil, nil, "", fmt.Errorf("--from-cluster: %w", err)
		}
		cluster, unserved = target.String(), objs.Unserved
		base = manifests.Base{Origin: cluster, Docs: objs.Docs}
	}
	set, problems = manifests.LoadOnto(base, f.files...)
	for _, p := range problems {
		fmt.Fprintln(stderr, "warning:", p)
	}
	if len(set.NodePools) == 0 {
		from := f.files
		if cluster != "" {
			from = append([]string{cluster}, from...)
		}
		if slices.Contains(unserved, "NodePool") {
			return nil, nil, "", fmt.Errorf("no NodePool in %s: the cluster does not serve NodePools (the karpenter.sh CRDs are not installed); add NodePools with -f",
				strings.Join(from, ", "))
		}
		if len(problems) > 0 {
			return nil, nil, "", fmt.Errorf("no usable NodePool in %s; nothing could launch (see the warnings above)", strings.Join(from, ", "))
		}
		return nil, nil, "", fmt.Errorf("no NodePool in %s; nothing could launch: add a karpenter.sh/v1 NodePool (and its NodeClass) with -f", strings.Join(from, ", "))
	}
	return set, problems, cluster, nil
}

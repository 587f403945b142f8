package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/nodewright/nodewright/internal/manifests"
	"github.com/nodewright/nodewright/internal/report"
	"github.com/nodewright/nodewright/internal/simulate"
)

func simulateCommand() *cobra.Command {
	var (
		files      []string
		timeline   string
		catalogs   catalogFlags
		output     string
		reportFile string
	)
	cmd := &cobra.Command{
		Use:   "simulate -f PATH [-f PATH...] [--timeline FILE] [--catalog FILE | --region R] [-o text|json] [--report FILE.html]",
		Short: "What would nodewright do with these manifests? Runs the controller's solver and disruption planner on a virtual clock",
		Long: `simulate reads Kubernetes manifests (NodePools, EC2NodeClasses, KWOKNodeClasses, workloads, nodes, pods, ...) as
kubectl get -o yaml prints them, and runs nodewright's own provisioning and disruption logic over
them on a virtual clock, following an optional timeline of changes. See docs/simulate.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return fmt.Errorf("no manifests: pass -f with a file or directory of NodePools, KWOKNodeClasses and workloads")
			}
			if output != "text" && output != "json" {
				return fmt.Errorf("-o %s: choose text or json", output)
			}
			set, problems := manifests.Load(files...)
			for _, p := range problems {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", p)
			}
			if len(set.NodePools) == 0 {
				return fmt.Errorf("no usable NodePool in %s; nothing could launch (see the warnings above)", strings.Join(files, ", "))
			}
			opts := simulate.Options{}
			inputs := append([]string(nil), set.Files...)
			if timeline != "" {
				tl, err := simulate.ReadTimeline(timeline)
				if err != nil {
					return err
				}
				opts.Timeline = tl
				inputs = append(inputs, timeline)
			}
			kwokCat, awsCat, err := catalogs.load()
			if err != nil {
				return err
			}
			opts.Catalog, opts.AWSCatalog = kwokCat, awsCat
			if catalogs.file != "" {
				inputs = append(inputs, catalogs.file)
			}
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
			res.Inputs = inputs
			res.Skipped = simulate.SkippedFrom(problems)
			if reportFile != "" {
				var buf bytes.Buffer
				if err := report.WriteHTML(&buf, res.Report("nodewright simulate: "+strings.Join(files, ", "))); err != nil {
					return err
				}
				if err := os.WriteFile(reportFile, buf.Bytes(), 0o644); err != nil {
					return fmt.Errorf("--report: %w", err)
				}
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), res.Text())
			return err
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "manifest file or directory (repeatable); directories are read recursively for *.yaml, *.yml, *.json")
	cmd.Flags().StringVar(&timeline, "timeline", "", "timeline file: what happens during the run (docs/simulate.md); default: one quiet hour")
	catalogs.register(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json (schema "+simulate.Schema+")")
	cmd.Flags().StringVar(&reportFile, "report", "", "also write an HTML report with charts to this file")
	return cmd
}

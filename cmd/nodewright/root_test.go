package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// pflag takes a flag usage's first back-quoted word as the value's name in
// --help, so "as `nodewright catalog` prints it" once showed
// "--catalog nodewright catalog". Every flag's placeholder must be one word
// and not a command line.
func TestFlagValueNames(t *testing.T) {
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		check := func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			if strings.Contains(name, " ") || strings.Contains(name, "nodewright") {
				t.Errorf("%s --%s: --help shows the value as %q; back-quote a one-word placeholder or no word at all", cmd.CommandPath(), f.Name, name)
			}
		}
		cmd.Flags().VisitAll(check)
		cmd.PersistentFlags().VisitAll(check)
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(rootCommand())
}

// A command that only groups subcommands must fail when none of them runs:
// cobra printed help and exited 0 for a bare group or a mistyped
// subcommand, so a script counted `nodewright explain pods big` a success.
// main exits 1 on any error Execute returns.
func TestGroupCommandsNeedAKnownSubcommand(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string // empty: must succeed
		wantOut string // in stdout and stderr together
	}{
		{[]string{"explain", "pods", "big"}, `unknown command "pods" for "nodewright explain" (did you mean node or pod?); run 'nodewright explain --help'`, ""},
		{[]string{"catalog", "gcp"}, `unknown command "gcp" for "nodewright catalog"; run 'nodewright catalog --help'`, ""},
		{[]string{"dev", "upp"}, `unknown command "upp" for "nodewright dev" (did you mean up?); run 'nodewright dev --help'`, ""},
		{[]string{"completion", "bsh"}, `unknown command "bsh" for "nodewright completion" (did you mean bash or fish or zsh?); run 'nodewright completion --help'`, ""},
		{[]string{"bogus"}, `unknown command "bogus" for "nodewright"; run 'nodewright --help'`, ""},
		{[]string{"explain"}, "nodewright explain needs a subcommand: node, pod", "nodewright explain [command]"},
		{[]string{"catalog"}, "nodewright catalog needs a subcommand: aws, kwok", "nodewright catalog [command]"},
		{[]string{"dev"}, "nodewright dev needs a subcommand: demo, down, up", "nodewright dev [command]"},
		{nil, "nodewright needs a subcommand: catalog, completion, controller, dev, explain, simulate", "nodewright [command]"},
		// Asking for help still succeeds.
		{[]string{"explain", "--help"}, "", "nodewright explain [command]"},
		{[]string{"help", "catalog"}, "", "nodewright catalog [command]"},
		{[]string{"catalog", "kwok"}, "", `"instanceTypes"`},
	} {
		out, errOut, err := execute(rootCommand(), tc.args...)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.wantErr)
		}
		if !strings.Contains(out+errOut, tc.wantOut) {
			t.Errorf("%q: output %q, want it to contain %q", tc.args, out+errOut, tc.wantOut)
		}
	}
}

// Running a group is now possible (it fails), but its usage must not offer
// "nodewright explain [flags]" as if that did something.
func TestGroupUsageOffersOnlySubcommands(t *testing.T) {
	groups := 0
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, c := range cmd.Commands() {
			walk(c)
		}
		if !cmd.HasAvailableSubCommands() {
			if u := cmd.UsageString(); !strings.Contains(u, "  "+cmd.UseLine()) {
				t.Errorf("%s: usage lacks its use line %q:\n%s", cmd.CommandPath(), cmd.UseLine(), u)
			}
			return
		}
		groups++
		u := cmd.UsageString()
		if strings.Contains(u, "  "+cmd.UseLine()+"\n") || !strings.Contains(u, "  "+cmd.CommandPath()+" [command]") {
			t.Errorf("%s: usage\n%s\nwant only %q", cmd.CommandPath(), u, cmd.CommandPath()+" [command]")
		}
	}
	walk(rootCommand())
	if groups < 5 { // nodewright, catalog, completion, dev, explain
		t.Errorf("found %d groups; the walk missed some", groups)
	}
}

// `nodewright help pods` printed help and exited 0, so a typo in a script's
// help topic passed unnoticed; an unknown topic must fail like an unknown
// command, naming the topic and the commands there are, while help for a
// real command still prints it and succeeds.
func TestHelpForAnUnknownTopicFails(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string // empty: must succeed
		wantOut string // in stdout and stderr together
	}{
		{[]string{"help", "pods"}, `unknown help topic "pods": "nodewright" has no command "pods"; its commands are catalog, completion, controller, dev, explain, simulate`, ""},
		{[]string{"help", "explain", "pods"}, `unknown help topic "explain pods": "nodewright explain" has no command "pods" (did you mean node or pod?); its commands are node, pod`, ""},
		{[]string{"help", "simulat"}, `unknown help topic "simulat": "nodewright" has no command "simulat" (did you mean simulate?); its commands are catalog, completion, controller, dev, explain, simulate`, ""},
		{[]string{"help", "simulate", "pods"}, `unknown help topic "simulate pods": "nodewright simulate" has no subcommands; run 'nodewright simulate --help'`, ""},
		{[]string{"help", "simulate"}, "", "Usage:\n  nodewright simulate (-f PATH"},
		{[]string{"help", "explain", "pod"}, "", "nodewright explain pod"},
		{[]string{"help"}, "", "nodewright [command]"},
	} {
		out, errOut, err := execute(rootCommand(), tc.args...)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.wantErr)
		}
		if !strings.Contains(out+errOut, tc.wantOut) {
			t.Errorf("%q: output %q, want it to contain %q", tc.args, out+errOut, tc.wantOut)
		}
	}
}

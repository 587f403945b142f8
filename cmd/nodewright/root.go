package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// groupAnnotation marks a command that only groups subcommands and runs
// none of its own; the usage template reads it to leave out a use line
// that would suggest running the group bare.
const groupAnnotation = "nodewright/group"

// rootCommand builds the whole nodewright command tree, as main runs it.
func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "nodewright",
		Short:         "A Kubernetes node autoscaler that speaks Karpenter's karpenter.sh/v1 API",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(catalogCommand(), controllerCommand(), devCommand(), explainCommand(), simulateCommand())
	// Cobra adds its completion command only when it executes; add it now
	// so that the walk below covers it too.
	root.InitDefaultCompletionCmd()
	requireSubcommands(root)
	// The default template shows "<path> [flags]" for every runnable
	// command, which the groups now are; for a group it would read as if
	// running it bare did something.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(),
		"{{if .Runnable}}", `{{if and .Runnable (not (index .Annotations "`+groupAnnotation+`"))}}`, 1))
	return root
}

// requireSubcommands makes every command under (and including) cmd that
// only groups subcommands fail when run without a known one. Cobra prints
// help and exits 0 for such a command, bare or followed by a mistyped
// subcommand (except at the root), so a script that runs
// `nodewright explain pods big` would count it a success.
func requireSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		requireSubcommands(c)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[groupAnnotation] = "true"
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		return fmt.Errorf("unknown command %q for %q%s; run '%s --help'",
			args[0], cmd.CommandPath(), suggestions(cmd, args[0]), cmd.CommandPath())
	}
	// Bare, the usage (on stderr) lists the subcommands to choose from;
	// the error makes the exit status say nothing ran.
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		_ = cmd.Usage()
		var names []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				names = append(names, c.Name())
			}
		}
		return fmt.Errorf("%s needs a subcommand: %s", cmd.CommandPath(), strings.Join(names, ", "))
	}
}

// suggestions names the subcommands close to a mistyped one, as cobra does
// for the root's unknown commands.
func suggestions(cmd *cobra.Command, typed string) string {
	if cmd.DisableSuggestions {
		return ""
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only on its own path
	}
	s := cmd.SuggestionsFor(typed)
	if len(s) == 0 {
		return ""
	}
	return " (did you mean " + strings.Join(s, " or ") + "?)"
}

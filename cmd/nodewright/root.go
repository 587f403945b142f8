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
	root.SetHelpCommand(helpCommand())
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

// helpCommand replaces cobra's help command, which for a topic that is no
// command printed the root's help, or "Unknown help topic" and the usage,
// and exited 0 either way: `nodewright help pods` looked like a success.
// Here an unknown topic is an error, as an unknown subcommand is, and a
// known one prints that command's help as before.
func helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "help prints the help of any command: nodewright help [path to command].",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			// Find stops at the deepest command the words name and hands
			// back the rest; the groups' Args hook (requireSubcommands)
			// means it reports no error for them, so the rest is checked
			// here.
			cmd, rest, err := c.Root().Find(args)
			if err == nil && len(rest) > 0 {
				err = unknownHelpTopic(cmd, rest[0])
			}
			if err != nil {
				return fmt.Errorf("unknown help topic %q: %w", strings.Join(args, " "), err)
			}
			// As cobra's help command does, so that --help shows in the
			// flags of a command that has not run.
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// unknownHelpTopic says that cmd has no subcommand typed, and which it has.
func unknownHelpTopic(cmd *cobra.Command, typed string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("%q has no subcommands; run '%s --help'", cmd.CommandPath(), cmd.CommandPath())
	}
	return fmt.Errorf("%q has no command %q%s; its commands are %s",
		cmd.CommandPath(), typed, suggestions(cmd, typed), strings.Join(names, ", "))
}

package simulate

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/manifests"
)

var update = flag.Bool("update", false, "rewrite the examples' expected outputs")

// exampleRun is a simulate command of an example's README, exactly as
// written there (run from the repository's root), with the file that holds
// what it prints.
type exampleRun struct {
	command string
	golden  string
	long    bool // skipped with -short
}

var exampleRuns = []exampleRun{
	{command: "nodewright simulate -f examples/ci-runners/common -f examples/ci-runners/plain --timeline examples/ci-runners/timeline.yaml",
		golden: "examples/ci-runners/expected-plain.txt"},
	{command: "nodewright simulate -f examples/ci-runners/common -f examples/ci-runners/attrition --timeline examples/ci-runners/timeline.yaml",
		golden: "examples/ci-runners/expected-attrition.txt"},
	{command: "nodewright simulate -f examples/image-update/manifests --timeline examples/image-update/timeline.yaml",
		golden: "examples/image-update/expected.txt"},
	{command: "nodewright simulate -f examples/kubelet-restart/manifests --timeline examples/kubelet-restart/timeline.yaml",
		golden: "examples/kubelet-restart/expected.txt"},
	{command: "nodewright simulate -f examples/eks-dump/cluster",
		golden: "examples/eks-dump/expected.txt"},
	{command: "nodewright simulate -f examples/40k-pods/manifests --timeline examples/40k-pods/timeline.yaml",
		golden: "examples/40k-pods/expected.txt", long: true},
}

// TestExamples runs each example's command as its README gives it, from
// the repository's root, and compares what the command prints with the
// example's expected output, the `inputs:` line included: the file is
// what a user who runs the README's command sees. Run with -update to
// accept a change.
func TestExamples(t *testing.T) {
	// The paths the README's commands name, and that the output's inputs
	// line repeats, are relative to the repository's root.
	t.Chdir(filepath.Join("..", ".."))
	for _, run := range exampleRuns {
		t.Run(run.golden, func(t *testing.T) {
			if run.long && testing.Short() {
				t.Skip("long example; run without -short")
			}
			files, timeline := simulateArgs(t, run.command)
			set, problems := manifests.Load(files...)
			if len(problems) > 0 {
				t.Fatalf("problems: %v", problems)
			}
			var tl *Timeline // "" runs the default timeline
			if timeline != "" {
				var err error
				if tl, err = ReadTimeline(timeline); err != nil {
					t.Fatal(err)
				}
			}
			e, err := New(set, Options{Timeline: tl})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// As the CLI sets it (cmd/nodewright/simulate.go).
			res.Inputs = Inputs("", set, timeline, "")
			got := res.Text()
			if *update {
				if err := os.WriteFile(run.golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(run.golden)
			if err != nil {
				t.Fatalf("%v; run go test ./internal/simulate -run TestExamples -update to write it", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (run with -update to accept):\n%s", run.golden, got)
			}
		})
	}
}

// simulateArgs reads the -f paths and the --timeline file of a command;
// a flag it does not know fails the test rather than be run without.
func simulateArgs(t *testing.T, command string) (files []string, timeline string) {
	t.Helper()
	args, ok := strings.CutPrefix(command, "nodewright simulate ")
	if !ok {
		t.Fatalf("%q is not a simulate command", command)
	}
	fields := strings.Fields(args)
	for i := 0; i < len(fields); i++ {
		if i+1 == len(fields) {
			t.Fatalf("%q: %s has no value", command, fields[i])
		}
		switch fields[i] {
		case "-f", "--filename":
			files = append(files, fields[i+1])
		case "--timeline":
			timeline = fields[i+1]
		default:
			t.Fatalf("%q: the test does not run %s; add it to simulateArgs", command, fields[i])
		}
		i++
	}
	return files, timeline
}

// The simulate commands of every example's README are the commands
// TestExamples runs, so that each has its expected output and none of the
// outputs is of a command the README no longer gives.
func TestExampleCommandsAreTheREADMEs(t *testing.T) {
	readmes, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var inREADMEs []string
	for _, readme := range readmes {
		data, err := os.ReadFile(readme)
		if err != nil {
			t.Fatal(err)
		}
		example := filepath.Base(filepath.Dir(readme))
		for _, c := range readmeCommands(string(data)) {
			inREADMEs = append(inREADMEs, c)
			i := slices.IndexFunc(exampleRuns, func(r exampleRun) bool { return r.command == c })
			switch {
			case i < 0:
				t.Errorf("examples/%s/README.md gives %q, which TestExamples does not run: add it to exampleRuns with its expected output", example, c)
			case filepath.Dir(exampleRuns[i].golden) != "examples/"+example:
				t.Errorf("examples/%s/README.md gives %q, whose expected output is %s, outside the example", example, c, exampleRuns[i].golden)
			}
		}
	}
	for _, r := range exampleRuns {
		if !slices.Contains(inREADMEs, r.command) {
			t.Errorf("no example README gives %q (the command of %s): fix the README or exampleRuns", r.command, r.golden)
		}
	}
}

// fence opens or closes a fenced code block of Markdown.
var fence = regexp.MustCompile("^\\s*```")

// readmeCommands lists the `nodewright simulate` commands of a README's
// code blocks, each on one line: continuations (a backslash at the end of
// a line) joined, comments dropped, spaces collapsed.
func readmeCommands(readme string) []string {
	var out []string
	inBlock := false
	var cmd strings.Builder
	for _, line := range strings.Split(readme, "\n") {
		if fence.MatchString(line) {
			inBlock = !inBlock
			cmd.Reset()
			continue
		}
		if !inBlock {
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if rest, cont := strings.CutSuffix(line, `\`); cont {
			cmd.WriteString(rest + " ")
			continue
		}
		cmd.WriteString(line)
		c := strings.Join(strings.Fields(cmd.String()), " ")
		cmd.Reset()
		if strings.HasPrefix(c, "nodewright simulate ") {
			out = append(out, c)
		}
	}
	return out
}

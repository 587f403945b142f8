package simulate

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

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
		for _, c := range codeBlockCommands(string(data), "nodewright simulate ") {
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

// codeBlockCommands lists the commands of a README's code blocks that
// start with prefix, each on one line: continuations (a backslash at the
// end of a line) joined, comments dropped, spaces collapsed.
func codeBlockCommands(readme, prefix string) []string {
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
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// builtinNamespaces exist in every cluster.
var builtinNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true}

// clusterScopedKinds are the kinds of the examples that have no namespace.
var clusterScopedKinds = map[string]bool{"Namespace": true, "NodePool": true, "NodeClaim": true, "NodeOverlay": true,
	"KWOKNodeClass": true, "EC2NodeClass": true, "Node": true, "PersistentVolume": true, "StorageClass": true}

// The `kubectl apply -f` commands of the examples' READMEs work on a real
// cluster as written: every namespaced object states its namespace, since
// one without lands in whatever namespace the user's kubeconfig is on
// while simulate puts it in default, and the namespace exists already or
// is created by a Namespace object that kubectl reads before the objects
// in it (kubectl applies in the order it reads, files as given and a
// directory's in lexical order; an object whose namespace is not there yet
// fails).
func TestExampleApplyCommandsWorkAsWritten(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	readmes, err := filepath.Glob(filepath.Join("examples", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, readme := range readmes {
		data, err := os.ReadFile(readme)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range codeBlockCommands(string(data), "kubectl apply ") {
			applied++
			var paths []string
			fields := strings.Fields(strings.TrimPrefix(c, "kubectl apply "))
			for i := 0; i+1 < len(fields); i += 2 {
				if fields[i] != "-f" {
					t.Fatalf("%s: %q: the test reads only -f", readme, c)
				}
				paths = append(paths, fields[i+1])
			}
			namespaces := map[string]bool{}
			for _, o := range objectsInApplyOrder(t, paths...) {
				switch {
				case o.Kind == "Namespace":
					namespaces[o.Metadata.Name] = true
				case clusterScopedKinds[o.Kind]:
				case o.Metadata.Namespace == "":
					t.Errorf("%s: %q: %s %s in %s has no metadata.namespace; it would land in the kubeconfig's current namespace", readme, c, o.Kind, o.Metadata.Name, o.file)
				case !builtinNamespaces[o.Metadata.Namespace] && !namespaces[o.Metadata.Namespace]:
					t.Errorf("%s: %q: %s %s/%s in %s: namespace %s does not exist; add a Namespace object that kubectl reads before it",
						readme, c, o.Kind, o.Metadata.Namespace, o.Metadata.Name, o.file, o.Metadata.Namespace)
				}
			}
		}
	}
	if applied == 0 {
		t.Fatal("no README gives a kubectl apply command; the test reads none")
	}
}

type appliedObject struct {
	file     string
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// objectsInApplyOrder lists the objects of paths in the order kubectl
// apply -f reads them.
func objectsInApplyOrder(t *testing.T, paths ...string) []appliedObject {
	t.Helper()
	var files []string
	for _, p := range paths {
		err := filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(f)) {
				files = append(files, f)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var out []appliedObject
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			o := appliedObject{file: f}
			if err := yaml.Unmarshal(doc, &o); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.Kind != "" {
				out = append(out, o)
			}
		}
	}
	return out
}

package simulate

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodewright/nodewright/internal/manifests"
)

var update = flag.Bool("update", false, "rewrite the examples' expected outputs")

// TestExamples runs each example under examples/ as its README says and
// compares the text summary with the example's expected output. Run
// with -update to accept a change.
func TestExamples(t *testing.T) {
	cases := []struct {
		name     string
		dirs     []string
		timeline string
		golden   string
		long     bool
	}{
		{name: "ci-runners without attrition", dirs: []string{"common", "plain"}, timeline: "timeline.yaml", golden: "expected-plain.txt"},
		{name: "ci-runners with attrition", dirs: []string{"common", "attrition"}, timeline: "timeline.yaml", golden: "expected-attrition.txt"},
		{name: "image-update", dirs: []string{"manifests"}, timeline: "timeline.yaml", golden: "expected.txt"},
		{name: "kubelet-restart", dirs: []string{"manifests"}, timeline: "timeline.yaml", golden: "expected.txt"},
		{name: "eks-dump", dirs: []string{"cluster"}, golden: "expected.txt"},
		{name: "40k-pods", dirs: []string{"manifests"}, timeline: "timeline.yaml", golden: "expected.txt", long: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.long && testing.Short() {
				t.Skip("long example; run without -short")
			}
			base := filepath.Join("..", "..", "examples", exampleDir(tc.name))
			var paths []string
			for _, d := range tc.dirs {
				paths = append(paths, filepath.Join(base, d))
			}
			set, problems := manifests.Load(paths...)
			if len(problems) > 0 {
				t.Fatalf("problems: %v", problems)
			}
			var tl *Timeline // "" runs the default timeline
			if tc.timeline != "" {
				var err error
				if tl, err = ReadTimeline(filepath.Join(base, tc.timeline)); err != nil {
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
			got := res.Text()
			golden := filepath.Join(base, tc.golden)
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v; run go test ./internal/simulate -run TestExamples -update to write it", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (run with -update to accept):\n%s", golden, got)
			}
		})
	}
}

// exampleDir is the folder of a case named "<folder> <variant>".
func exampleDir(name string) string {
	for i, c := range name {
		if c == ' ' {
			return name[:i]
		}
	}
	return name
}

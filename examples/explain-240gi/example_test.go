// Package explain240gi holds example 4 of the docs: a 240Gi pod that does
// not fit an r5a.8xlarge until a NodeOverlay states the machine's real
// memory. Its test runs `nodewright explain pod` offline on the example's
// manifests and compares the output with testdata/*.golden.
package explain240gi

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/explain"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the current output")

func TestExplainOffline(t *testing.T) {
	cases := []struct {
		name  string
		paths []string
		want  []string // must appear, so that -update cannot lose the point
	}{
		{"without-overlay", []string{"cluster"}, []string{
			"Decision: unschedulable",
			"r5a.8xlarge $1.8080/h: does not fit: memory: pod 245760Mi + DaemonSets 200Mi = 245960Mi > allocatable: 262144Mi - 19661Mi (7.5%) - 2829Mi kube-reserved - 100Mi eviction = 239554Mi",
		}},
		{"with-overlay", []string{"cluster", "overlay"}, []string{
			"Decision: launch a NodeClaim of NodePool memory at $1.8080/h",
			"fits: memory: pod 245760Mi + DaemonSets 200Mi = 245960Mi <= allocatable: 262144Mi (NodeOverlay r5a-8xlarge-real-memory)",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, problems, err := explain.Offline(context.Background(), tc.paths, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) > 0 {
				t.Fatalf("the example's manifests have problems: %v", problems)
			}
			in.Now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
			ex, err := explain.Pod(in, "default", "big")
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := ex.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v; go test -update creates it", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("output differs from %s (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, b.Bytes(), want)
			}
		})
	}
}

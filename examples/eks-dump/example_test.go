// Package eksdump holds the example that starts from a `kubectl get -o
// yaml` dump of an EKS cluster running Karpenter. Its test asks `explain`
// what a 240Gi pod would need, offline, and compares the answer with
// testdata/big-pod.golden; internal/simulate's TestExamples checks what
// the cluster would cost (expected.txt).
package eksdump

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

func TestBigPod(t *testing.T) {
	in, problems, err := explain.Offline(context.Background(), []string{"cluster", "big-pod"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("the example's manifests have problems: %v", problems)
	}
	in.Now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ex, err := explain.Pod(in, "shop", "big")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ex.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	// The points the README makes, so that -update cannot lose them.
	for _, w := range []string{
		"Decision: launch a NodeClaim of NodePool memory at $2.7120/h",
		"r5a.12xlarge $2.7120/h",
		"NodePool general: the pod requires label workload",
		"r5a.8xlarge $1.8080/h: does not fit: memory: pod 245760Mi + DaemonSets 64Mi = 245824Mi > allocatable: 262144Mi - 19661Mi (7.5%) - 2829Mi kube-reserved - 100Mi eviction = 239554Mi",
	} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, b.String())
		}
	}
	path := filepath.Join("testdata", "big-pod.golden")
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
}

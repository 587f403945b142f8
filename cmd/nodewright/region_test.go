package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// westDump is examples/eks-dump with its EC2NodeClass's subnets in
// us-west-2, as a dump of a cluster there is.
func westDump(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"karpenter.yaml", "workloads.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "eks-dump", "cluster", name))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.NewReplacer("us-east-1", "us-west-2", "use1-az", "usw2-az").Replace(string(b))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRegionFromEC2NodeClassSubnets: a dump of a us-west-2 cluster
// simulates and explains in us-west-2 without --region, saying so; with
// --region us-east-1 simulate refuses and explain names the EC2NodeClass,
// its zones and the fix, where both printed 0 nodes and pending pods with
// no word of the region.
func TestRegionFromEC2NodeClassSubnets(t *testing.T) {
	dump := westDump(t)
	bigPod := filepath.Join("..", "..", "examples", "eks-dump", "big-pod")
	const said = "region: us-west-2 (from EC2NodeClass default's subnets)\n"
	cases := []struct {
		name string
		cmd  func() *cobra.Command
		args []string
		// wantErr, wantOut and wantStderr are parts of each.
		wantErr, wantOut, wantStderr []string
	}{{
		name: "simulate", cmd: simulateCommand, args: []string{"-f", dump},
		wantOut: []string{said, "prices: AWS us-west-2;", "us-west-2a on-demand", "pods at the end: 35 running, 0 pending"},
	}, {
		name: "simulate --region us-east-1", cmd: simulateCommand, args: []string{"-f", dump, "--region", "us-east-1"},
		wantErr: []string{"no NodePool can launch a node", "NodePools general, memory launch nothing",
			"EC2NodeClass default's subnets (status.subnets) are in zones us-west-2a, us-west-2b, us-west-2c", "AWS region us-east-1", "pass --region us-west-2"},
	}, {
		name: "explain pod", cmd: explainCommand, args: []string{"pod", "big", "-n", "shop", "-f", dump, "-f", bigPod},
		wantOut: []string{"Decision: launch a NodeClaim of NodePool memory"}, wantStderr: []string{said},
	}, {
		name: "explain pod --region us-east-1", cmd: explainCommand, args: []string{"pod", "big", "-n", "shop", "-f", dump, "-f", bigPod, "--region", "us-east-1"},
		wantOut: []string{"NodePool memory: launches nothing:", "EC2NodeClass default's subnets (status.subnets) are in zones us-west-2a, us-west-2b, us-west-2c",
			"pass --region us-west-2"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := execute(tc.cmd(), tc.args...)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("succeeded; want an error\n%s", out)
				}
				for _, part := range tc.wantErr {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q does not say %q", err, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			for _, part := range tc.wantOut {
				if !strings.Contains(out, part) {
					t.Errorf("output does not say %q:\n%s", part, out)
				}
			}
			for _, part := range tc.wantStderr {
				if !strings.Contains(stderr, part) {
					t.Errorf("stderr does not say %q:\n%s", part, stderr)
				}
			}
			if len(tc.wantStderr) == 0 && strings.Contains(stderr, "region:") {
				t.Errorf("stderr names a region though the user gave it:\n%s", stderr)
			}
		})
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/catalog"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
	"github.com/nodewright/nodewright/internal/simulate"
	"github.com/nodewright/nodewright/internal/testaws"
	"github.com/nodewright/nodewright/internal/testcluster"
)

// execute runs cmd with args and returns its stdout and stderr.
func execute(cmd *cobra.Command, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func awsExample(t *testing.T, parts ...string) string {
	t.Helper()
	compat, err := testcluster.CompatDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{compat, "karpenter-aws-examples"}, parts...)...)
}

// TestSimulateListsSkippedObjectsInJSON: the general-purpose example with
// inflate simulates with no warning, and an object the simulator cannot use
// is named in -o json, not only on stderr.
func TestSimulateListsSkippedObjectsInJSON(t *testing.T) {
	extra := filepath.Join(t.TempDir(), "service.yaml")
	if err := os.WriteFile(extra, []byte("apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := execute(simulateCommand(), "-o", "json",
		"-f", awsExample(t, "nodepools", "general-purpose.yaml"), "-f", awsExample(t, "workloads", "inflate.yaml"), "-f", extra)
	if err != nil {
		t.Fatalf("simulate: %v\n%s", err, stderr)
	}
	var res simulate.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Pods.Running != 1 || len(res.Nodes) != 1 {
		t.Errorf("inflate's one pod: running %d on %v; want 1 running on one node", res.Pods.Running, res.Nodes)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Kind != "Service" || res.Skipped[0].File != extra || res.Skipped[0].Message == "" {
		t.Errorf("skipped %+v; want the Service of %s with why", res.Skipped, extra)
	}
	if strings.Count(stderr, "warning:") != 1 || !strings.Contains(stderr, "Service") {
		t.Errorf("stderr should warn once, about the Service:\n%s", stderr)
	}
}

// Without a NodePool, simulate says what to add; it points at warnings only
// when there were some (an empty file printed none and said "see the
// warnings above").
func TestSimulateWithoutNodePool(t *testing.T) {
	dir := t.TempDir()
	empty, bad := filepath.Join(dir, "empty.yaml"), filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		file, want, notWant string
	}{
		{file: empty, want: "add a karpenter.sh/v1 NodePool", notWant: "warnings above"},
		{file: bad, want: "see the warnings above"},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			_, stderr, err := execute(simulateCommand(), "-f", tc.file)
			if err == nil {
				t.Fatal("simulate without a usable NodePool succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) || (tc.notWant != "" && strings.Contains(err.Error(), tc.notWant)) {
				t.Errorf("error %q; want it to say %q and not %q", err, tc.want, tc.notWant)
			}
			if tc.notWant != "" && strings.Contains(stderr, "warning:") {
				t.Errorf("warnings printed for an empty file: %s", stderr)
			}
		})
	}
}

// TestSimulateManifestsAsArguments: a manifest path given without -f said
// only 'unknown command "x.yaml"'; it must give the command with -f.
func TestSimulateManifestsAsArguments(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a file", []string{"simulate", file}, "nodewright simulate -f " + file},
		{"two paths", []string{"simulate", file, "dir/"}, "nodewright simulate -f " + file + " -f dir/"},
		{"a word", []string{"simulate", "bogus"}, `unknown argument "bogus" for "nodewright simulate"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := execute(rootCommand(), tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want it to say %q", err, tc.want)
			}
		})
	}
}

// TestCatalogAWSRoundTrips: what `catalog aws` prints, --catalog reads back
// and simulates with, and a region the catalog lacks is refused by name.
func TestCatalogAWSRoundTrips(t *testing.T) {
	out, _, err := execute(catalogCommand(), "aws", "--region", "us-west-2")
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Read(strings.NewReader(out))
	if err != nil {
		t.Fatalf("catalog aws output does not read back: %v", err)
	}
	if c.Region != "us-west-2" || len(c.InstanceTypes) < 500 || c.SpotPriceModel == "" || c.PriceSource == "" {
		t.Errorf("region %q, %d types, spot model %q, price source %q", c.Region, len(c.InstanceTypes), c.SpotPriceModel, c.PriceSource)
	}
	file := filepath.Join(t.TempDir(), "us-west-2.json")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := execute(simulateCommand(), "-o", "json", "--catalog", file,
		"-f", awsExample(t, "nodepools", "general-purpose.yaml"), "-f", awsExample(t, "workloads", "inflate.yaml"))
	if err != nil {
		t.Fatalf("simulate --catalog: %v\n%s", err, stderr)
	}
	var res simulate.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Nodes) != 1 || !strings.HasPrefix(res.Nodes[0].Zone, "us-west-2") {
		t.Errorf("nodes %+v; want one in a us-west-2 zone", res.Nodes)
	}
	if _, _, err := execute(catalogCommand(), "aws", "--region", "mars-1"); err == nil || !strings.Contains(err.Error(), "us-east-1") {
		t.Errorf("unknown region: error %v; want one listing the known regions", err)
	}
}

// TestCatalogAWSLive prints a live catalog from an EC2 API on loopback
// (moto), with credentials from the environment as the SDK's chain reads
// them, and checks it against the built-in one made from the same facts.
func TestCatalogAWSLive(t *testing.T) {
	moto := testaws.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "eu-west-1") // --region wins
	out, stderr, err := execute(catalogCommand(), "aws", "--live", "--endpoint", moto.Endpoint, "--region", "us-east-1")
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	live, err := catalog.Read(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := awscatalog.Region("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if live.Region != "us-east-1" || len(live.InstanceTypes) != len(builtin.InstanceTypes) || !strings.Contains(live.PriceSource, "not the Pricing API") {
		t.Errorf("live catalog: region %s, %d types (built in: %d), priceSource %q", live.Region, len(live.InstanceTypes), len(builtin.InstanceTypes), live.PriceSource)
	}
	if _, _, err := execute(catalogCommand(), "aws", "--endpoint", moto.Endpoint); err == nil || !strings.Contains(err.Error(), "--endpoint is for --live") {
		t.Errorf("--endpoint without --live: %v", err)
	}
}

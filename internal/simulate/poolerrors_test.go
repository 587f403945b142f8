package simulate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/catalog"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
	"github.com/nodewright/nodewright/internal/manifests"
	"github.com/nodewright/nodewright/internal/solver"
)

// regionPool is a NodePool on an EC2NodeClass of the same name whose
// status lists a subnet in each zone; a NodePool with a label, so that a
// workload can ask for it alone.
func regionPool(name string, zones ...string) string {
	var subnets strings.Builder
	for i, z := range zones {
		fmt.Fprintf(&subnets, "  - {id: subnet-%s-%d, zone: %s}\n", name, i, z)
	}
	return fmt.Sprintf(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]s}
spec:
  template:
    metadata:
      labels: {pool: %[1]s}
    spec:
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: %[1]s}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: %[1]s}
spec:
  role: KarpenterNodeRole-example
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: example}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: example}}]
  amiSelectorTerms: [{alias: al2023@latest}]
status:
  subnets:
%[2]s---
`, name, subnets.String())
}

// poolApp is a Deployment of three pods on the NodePool of that name.
func poolApp(pool string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: app-%[1]s, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: app-%[1]s}}
  template:
    metadata: {labels: {app: app-%[1]s}}
    spec:
      nodeSelector: {pool: %[1]s}
      containers:
      - {name: app, image: app, resources: {requests: {cpu: "1", memory: 1Gi}}}
---
`, pool)
}

// TestEC2NodeClassInAnotherRegion runs EC2NodeClasses whose subnets are in
// another region than the AWS catalog's: with no catalog given the run
// takes the subnets' region and says so; with a catalog of another region,
// a NodePool that launches nothing is named, with its class, zones, the
// region and the fix, in the warnings and in its pods' reasons, and a run
// in which no NodePool can launch is refused instead of planning 0 nodes.
func TestEC2NodeClassInAnotherRegion(t *testing.T) {
	cases := []struct {
		name     string
		manifest string
		region   string // the AWS catalog given, "" for none
		// wantErr are the parts of New's error; the rest is checked on the
		// run's result.
		wantErr    []string
		wantRegion string
		wantZone   string // a zone the nodes are in
		running    int
		// wantPending and wantWarning are parts of the pending pods'
		// reason and of the warnings.
		wantPending, wantWarning []string
	}{{
		name:       "us-west-2 subnets, no --region: us-west-2, said",
		manifest:   regionPool("west", "us-west-2a", "us-west-2b") + poolApp("west"),
		wantRegion: "us-west-2 (from EC2NodeClass west's subnets)", wantZone: "us-west-2", running: 3,
	}, {
		name:     "us-west-2 subnets, --region us-east-1: refused, saying why",
		manifest: regionPool("west", "us-west-2a", "us-west-2b") + poolApp("west"),
		region:   "us-east-1",
		wantErr: []string{"no NodePool can launch a node", "NodePool west launches nothing", "EC2NodeClass west's subnets (status.subnets) are in zones us-west-2a, us-west-2b",
			"AWS region us-east-1", "pass --region us-west-2"},
	}, {
		name:     "one NodePool in another region: the others run, it is named",
		manifest: regionPool("east", "us-east-1a") + regionPool("west", "us-west-2a") + poolApp("east") + poolApp("west"),
		wantZone: "us-east-1a", running: 3,
		wantPending: []string{"; NodePool west: launches nothing: NodeClass west is not ready\n",
			"NodePool west: launches nothing: NodeClass west is not ready: EC2NodeClass west's subnets (status.subnets) are in zones us-west-2a, and AWS region us-east-1 (the default)",
			"pass --region us-west-2"},
		wantWarning: []string{"NodePool west launches nothing: NodeClass west is not ready: EC2NodeClass west's subnets", "pass --region us-west-2"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "input.yaml")
			if err := os.WriteFile(file, []byte(tc.manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			set, problems := manifests.Load(file)
			if len(problems) > 0 {
				t.Fatalf("objects skipped: %v", problems)
			}
			tl, err := ParseTimeline("test timeline", []byte("duration: 10m\n"))
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{Timeline: tl}
			if tc.region != "" {
				var c *catalog.Catalog
				if c, err = awscatalog.Region(tc.region); err != nil {
					t.Fatal(err)
				}
				opts.AWSCatalog = c
			}
			e, err := New(set, opts)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatal("New succeeded; want an error")
				}
				for _, part := range tc.wantErr {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q does not say %q", err, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, err := e.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if r.Region != tc.wantRegion {
				t.Errorf("region %q, want %q", r.Region, tc.wantRegion)
			}
			if tc.wantRegion != "" && !strings.Contains(r.Text(), "region: "+tc.wantRegion+"\n") {
				t.Errorf("the text does not say the region:\n%s", r.Text())
			}
			if r.Pods.Running != tc.running {
				t.Errorf("%d pods running, want %d; pending: %v", r.Pods.Running, tc.running, r.Pending)
			}
			for _, g := range r.Nodes {
				if !strings.HasPrefix(g.Zone, tc.wantZone) {
					t.Errorf("%d x %s in %s; want nodes in %s", g.Count, g.InstanceType, g.Zone, tc.wantZone)
				}
			}
			var pending []string
			for _, g := range r.Pending {
				pending = append(pending, g.Reason)
			}
			for _, part := range tc.wantPending {
				if !strings.Contains(strings.Join(pending, "\n"), part) {
					t.Errorf("pending reasons do not say %q:\n%s", part, strings.Join(pending, "\n"))
				}
			}
			for _, part := range tc.wantWarning {
				if !strings.Contains(strings.Join(r.Warnings, "\n"), part) {
					t.Errorf("warnings do not say %q: %v", part, r.Warnings)
				}
			}
			if len(tc.wantWarning) == 0 && len(r.Warnings) > 0 {
				t.Errorf("warnings: %v", r.Warnings)
			}
		})
	}
}

// TestWithPoolErrors checks how a pod's reason names the NodePools left
// out of the solve.
func TestWithPoolErrors(t *testing.T) {
	notReady := fmt.Errorf("listing instance types for NodePool west: %w",
		&cloudprovider.NodeClassNotReadyError{NodeClass: "west", Reason: "its zones are elsewhere"})
	cases := []struct {
		name   string
		reason solver.Reason
		errs   map[string]error
		want   string
	}{{
		name:   "no error: the solver's reason",
		reason: solver.Reason{Summary: "unschedulable: no NodePool"},
		want:   "unschedulable: no NodePool",
	}, {
		name:   "every NodePool left out: it replaces 'no NodePool'",
		reason: solver.Reason{Summary: "unschedulable: no NodePool"},
		errs:   map[string]error{"west": notReady},
		want:   "unschedulable: NodePool west: launches nothing: NodeClass west is not ready\n  NodePool west: launches nothing: NodeClass west is not ready: its zones are elsewhere",
	}, {
		name: "beside the NodePools solved",
		reason: solver.Reason{Summary: "unschedulable: NodePool east: taint a=b:NoSchedule not tolerated",
			NodePools: []solver.PoolReason{{NodePool: "east", Reason: "taint a=b:NoSchedule not tolerated"}}},
		errs: map[string]error{"west": notReady, "other": fmt.Errorf("listing instance types for NodePool other: %w", fmt.Errorf("boom"))},
		want: "unschedulable: NodePool east: taint a=b:NoSchedule not tolerated; NodePool other: launches nothing: boom; NodePool west: launches nothing: NodeClass west is not ready" +
			"\n  NodePool east: taint a=b:NoSchedule not tolerated\n  NodePool other: launches nothing: boom" +
			"\n  NodePool west: launches nothing: NodeClass west is not ready: its zones are elsewhere",
	}, {
		name:   "blocked before any NodePool: unchanged",
		reason: solver.Reason{Summary: "unschedulable: PersistentVolumeClaim default/data not found"},
		errs:   map[string]error{"west": notReady},
		want:   "unschedulable: PersistentVolumeClaim default/data not found",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := withPoolErrors(&tc.reason, tc.errs); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

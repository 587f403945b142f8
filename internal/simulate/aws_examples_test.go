package simulate

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
	"github.com/nodewright/nodewright/internal/manifests"
	"github.com/nodewright/nodewright/internal/testcluster"
)

// awsExamples is Karpenter's AWS examples folder in the shared compat data.
func awsExamples(t *testing.T) string {
	t.Helper()
	compat, err := testcluster.CompatDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(compat, "karpenter-aws-examples")
}

// simulateFiles runs the files under a timeline, failing on any problem
// the loader reports: every object must be used.
func simulateFiles(t *testing.T, timeline string, files ...string) *Result {
	t.Helper()
	set, problems := manifests.Load(files...)
	if len(problems) > 0 {
		t.Fatalf("objects skipped: %v", problems)
	}
	tl, err := ParseTimeline("test timeline", []byte(timeline))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(set, Options{Timeline: tl})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// inflate100 scales Karpenter's inflate Deployment to 100 replicas at the
// start and leaves ten minutes for the nodes to come up.
const inflate100 = `duration: 10m
events:
- at: 0s
  scale: {kind: Deployment, name: inflate, replicas: 100}
`

func totalNodes(r *Result) int {
	n := 0
	for _, g := range r.Nodes {
		n += g.Count
	}
	return n
}

// TestKarpenterAWSExampleNodePoolsSimulate runs every example NodePool of
// Karpenter's AWS provider, with its EC2NodeClass, against inflate scaled
// to 100 pods: nothing is skipped, every pod runs, and every node is of a
// type the NodePool allows.
func TestKarpenterAWSExampleNodePoolsSimulate(t *testing.T) {
	dir := awsExamples(t)
	files, err := filepath.Glob(filepath.Join(dir, "nodepools", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 22 {
		t.Fatalf("%d example NodePool files under %s, want 22", len(files), dir)
	}
	inflate := filepath.Join(dir, "workloads", "inflate.yaml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := simulateFiles(t, inflate100, f, inflate)
			if limit, ok := cpuLimit(t, f); ok {
				// The limit stops the pool before every pod runs; what it
				// launched must stay within it and use most of it.
				cpus := int64(0)
				for _, g := range r.Nodes {
					cpus += int64(g.Count) * catalogCPU(t, g.InstanceType)
				}
				if cpus > limit || r.Pods.Running < int(limit)*9/10 || r.Pods.Running+r.Pods.Pending != 100 {
					t.Fatalf("%d vCPUs launched under a limit of %d; pods %+v", cpus, limit, r.Pods)
				}
			} else if r.Pods.Running != 100 || r.Pods.Pending != 0 {
				t.Fatalf("pods at the end: %+v; want 100 running", r.Pods)
			}
			if len(r.Warnings) > 0 {
				t.Errorf("warnings: %v", r.Warnings)
			}
			if !strings.Contains(r.Prices, "spot = 35% of the on-demand price") {
				t.Errorf("prices %q: the run must say its spot prices are modelled", r.Prices)
			}
			for _, g := range r.Nodes {
				if !allowedByExample(t, f, g) {
					t.Errorf("%d x %s %s %s: not what the example NodePool allows", g.Count, g.InstanceType, g.Zone, g.CapacityType)
				}
			}
			t.Logf("%s: %d nodes, $%.4f/h: %s", filepath.Base(f), totalNodes(r), r.CostPerHour, nodeSummary(r))
		})
	}
}

// allowedByExample checks a node group against the example's NodePools,
// independently of the solver: the type's labels from the AWS catalog,
// with the group's zone and capacity type, must meet every requirement of
// one of the file's NodePools.
func allowedByExample(t *testing.T, file string, g NodeGroup) bool {
	t.Helper()
	labels := catalogLabels(t, g.InstanceType)
	labels[corev1.LabelTopologyZone], labels[karpv1.CapacityTypeLabelKey] = g.Zone, g.CapacityType
	if strings.Contains(filepath.Base(file), "windows") {
		labels[corev1.LabelOSStable] = "windows"
	}
	set, _ := manifests.Load(file)
	for _, np := range set.NodePools {
		if meets(labels, np.Spec.Template.Spec.Requirements) {
			return true
		}
	}
	return false
}

// usEast1Labels maps each type of the built-in us-east-1 catalog to the
// labels a Linux node of it gets; built once.
var usEast1Labels = sync.OnceValues(func() (map[string]map[string]string, error) {
	cat, err := awscatalog.Region(awscatalog.DefaultRegion)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, it := range cat.InstanceTypes {
		labels := map[string]string{corev1.LabelInstanceTypeStable: it.Name, corev1.LabelArchStable: it.Arch, corev1.LabelOSStable: "linux"}
		for k, v := range it.Labels {
			labels[k] = v
		}
		out[it.Name] = labels
	}
	return out, nil
})

// catalogLabels are the labels a node of the named type gets on Linux, as
// the built-in AWS catalog of us-east-1 lists them; the caller may change
// the map it gets.
func catalogLabels(t *testing.T, name string) map[string]string {
	t.Helper()
	all, err := usEast1Labels()
	if err != nil {
		t.Fatal(err)
	}
	labels, ok := all[name]
	if !ok {
		t.Fatalf("%s is not in the catalog", name)
	}
	return maps.Clone(labels)
}

// cpuLimit is the CPU limit of the file's NodePool, if it has one.
func cpuLimit(t *testing.T, file string) (int64, bool) {
	t.Helper()
	set, _ := manifests.Load(file)
	for _, np := range set.NodePools {
		if q, ok := np.Spec.Limits[corev1.ResourceCPU]; ok {
			return q.Value(), true
		}
	}
	return 0, false
}

// catalogCPU is the vCPUs of the named type in the built-in catalog.
func catalogCPU(t *testing.T, name string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(catalogLabels(t, name)["karpenter.k8s.aws/instance-cpu"], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// meets evaluates node selector requirements on labels by their plain
// definitions.
func meets(labels map[string]string, reqs []karpv1.NodeSelectorRequirementWithMinValues) bool {
	for _, r := range reqs {
		v, ok := labels[r.Key]
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			if !ok || !slices.Contains(r.Values, v) {
				return false
			}
		case corev1.NodeSelectorOpNotIn:
			if ok && slices.Contains(r.Values, v) {
				return false
			}
		case corev1.NodeSelectorOpExists:
			if !ok {
				return false
			}
		case corev1.NodeSelectorOpDoesNotExist:
			if ok {
				return false
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			n, err1 := strconv.Atoi(v)
			bound, err2 := strconv.Atoi(r.Values[0])
			if !ok || err1 != nil || err2 != nil || (r.Operator == corev1.NodeSelectorOpGt) != (n > bound) || n == bound {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func nodeSummary(r *Result) string {
	var parts []string
	for _, g := range r.Nodes {
		parts = append(parts, fmt.Sprintf("%d x %s (%s, %s)", g.Count, g.InstanceType, g.Zone, g.CapacityType))
	}
	return strings.Join(parts, ", ")
}

// TestKarpenterAWSExampleWorkloadsPlace runs Karpenter's example workloads
// on a NodePool open to every type and checks each lands on the kind of
// machine a user would expect. Four of the examples misspell
// allowPrivilegeEscalation ("allowPrivilegedEscalation"), which the API
// server refuses as an unknown field and so does the loader; the test
// corrects that one word in a copy.
func TestKarpenterAWSExampleWorkloadsPlace(t *testing.T) {
	dir := awsExamples(t)
	cases := []struct {
		file, deployment string
		replicas         int
		check            func(t *testing.T, r *Result)
	}{
		{"arm64.yaml", "arm64", 3, everyNode(func(l map[string]string, _ NodeGroup) bool { return l[corev1.LabelArchStable] == "arm64" })},
		{"prefer-arm.yaml", "prefer-arm", 3, everyNode(func(l map[string]string, _ NodeGroup) bool { return l[corev1.LabelArchStable] == "arm64" })},
		{"spot.yaml", "spot", 3, everyNode(func(_ map[string]string, g NodeGroup) bool { return g.CapacityType == "spot" })},
		{"gpu-nvidia.yaml", "gpu-nvidia", 2, everyNode(func(l map[string]string, _ NodeGroup) bool {
			return l["karpenter.k8s.aws/instance-gpu-manufacturer"] == "nvidia"
		})},
		{"gpu-amd.yaml", "gpu-amd", 2, everyNode(func(l map[string]string, _ NodeGroup) bool {
			return l["karpenter.k8s.aws/instance-gpu-manufacturer"] == "amd"
		})},
		{"neuron.yaml", "neuron", 2, everyNode(func(l map[string]string, g NodeGroup) bool {
			return strings.HasPrefix(g.InstanceType, "inf") || strings.HasPrefix(g.InstanceType, "trn")
		})},
		{"spread-zone.yaml", "zone-spread", 12, func(t *testing.T, r *Result) {
			zones := map[string]int{}
			for _, g := range r.Nodes {
				zones[g.Zone] += g.Count
			}
			if len(zones) < 3 {
				t.Errorf("nodes in %d zones (%v); a zone spread of 12 pods should use several", len(zones), zones)
			}
		}},
		{"spread-hostname.yaml", "host-spread", 10, func(t *testing.T, r *Result) {
			if n := totalNodes(r); n < 5 {
				t.Errorf("%d nodes for 10 pods spread by hostname with maxSkew 2; want at least 5", n)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, "workloads", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			workload := filepath.Join(t.TempDir(), tc.file)
			fixed := strings.ReplaceAll(string(b), "allowPrivilegedEscalation", "allowPrivilegeEscalation")
			if err := os.WriteFile(workload, []byte(fixed), 0o644); err != nil {
				t.Fatal(err)
			}
			tl := fmt.Sprintf("duration: 10m\nevents:\n- at: 0s\n  scale: {kind: Deployment, name: %s, replicas: %d}\n", tc.deployment, tc.replicas)
			r := simulateFiles(t, tl, "testdata/aws/nodepool.yaml", workload)
			if r.Pods.Running != tc.replicas || r.Pods.Pending != 0 {
				t.Fatalf("pods at the end: %+v; want %d running (pending: %v)", r.Pods, tc.replicas, r.Pending)
			}
			tc.check(t, r)
			t.Logf("%s: %s, $%.4f/h", tc.file, nodeSummary(r), r.CostPerHour)
		})
	}
}

// everyNode checks ok for each node group, with its type's catalog labels.
func everyNode(ok func(labels map[string]string, g NodeGroup) bool) func(*testing.T, *Result) {
	return func(t *testing.T, r *Result) {
		t.Helper()
		if len(r.Nodes) == 0 {
			t.Fatal("no nodes")
		}
		for _, g := range r.Nodes {
			if !ok(catalogLabels(t, g.InstanceType), g) {
				t.Errorf("%d x %s (%s, %s) is not the kind of machine expected", g.Count, g.InstanceType, g.Zone, g.CapacityType)
			}
		}
	}
}

// TestKarpenterAWSMinValuesOnAWSLabels checks that every NodeClaim of the
// minValues examples keeps open as many distinct values of the AWS labels as
// the NodePool demands: counted from the claim's instance types and the
// catalog's labels, not from the solver's own bookkeeping.
func TestKarpenterAWSMinValuesOnAWSLabels(t *testing.T) {
	dir := awsExamples(t)
	cases := []struct {
		file string
		min  map[string]int
	}{
		{"min-values-family.yaml", map[string]int{"karpenter.k8s.aws/instance-family": 5}},
		{"min-values-multiple-keys.yaml", map[string]int{
			"karpenter.k8s.aws/instance-category": 2, "karpenter.k8s.aws/instance-family": 5, corev1.LabelInstanceTypeStable: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			set, problems := manifests.Load(filepath.Join(dir, "nodepools", tc.file), filepath.Join(dir, "workloads", "inflate.yaml"))
			if len(problems) > 0 {
				t.Fatalf("objects skipped: %v", problems)
			}
			tl, err := ParseTimeline("test timeline", []byte(inflate100))
			if err != nil {
				t.Fatal(err)
			}
			e, err := New(set, Options{Timeline: tl})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if len(e.claims) == 0 {
				t.Fatal("no NodeClaims")
			}
			for _, nc := range e.claims {
				var types []string
				for _, r := range nc.Spec.Requirements {
					if r.Key == corev1.LabelInstanceTypeStable && r.Operator == corev1.NodeSelectorOpIn {
						types = r.Values
					}
				}
				for key, want := range tc.min {
					distinct := map[string]bool{}
					for _, typ := range types {
						distinct[catalogLabels(t, typ)[key]] = true
					}
					if len(distinct) < want {
						t.Errorf("%s: %d distinct %s among its %d types, want at least %d", nc.Name, len(distinct), key, len(types), want)
					}
				}
			}
		})
	}
}

package crd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/internal/testcluster"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

// TestKarpenterExampleNodePoolsAccepted creates every NodePool document of the
// AWS provider's examples against a real API server with our CRDs.
func TestKarpenterExampleNodePoolsAccepted(t *testing.T) {
	compat, err := testcluster.CompatDir()
	if err != nil {
		t.Fatal(err)
	}
	examplesDir := filepath.Join(compat, "karpenter-aws-examples", "nodepools")
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no example NodePools under %s", examplesDir)
	}
	count := 0
	for _, f := range files {
		for i, obj := range decodeAll(t, f) {
			if obj.GetKind() != "NodePool" {
				continue // EC2NodeClass belongs to the AWS provider
			}
			count++
			t.Run(filepath.Base(f)+"/"+obj.GetName(), func(t *testing.T) {
				if err := cluster.Client.Create(context.Background(), obj, client.DryRunAll); err != nil {
					t.Errorf("%s document %d (NodePool %s) refused: %v", f, i, obj.GetName(), err)
				}
			})
		}
	}
	if count < len(files) {
		t.Fatalf("found %d NodePools in %d files; expected at least one per file", count, len(files))
	}
}

// TestBadInputRefused proves each kind of bad input is refused by the API server
// with a message that names the field.
func TestBadInputRefused(t *testing.T) {
	cases := []struct {
		name     string
		manifest string
		want     []string // substrings of the error
	}{
		{"budget over 100%", nodePool(`disruption: {budgets: [{nodes: "150%"}]}`),
			[]string{"spec.disruption.budgets[0].nodes", "150%"}},
		{"duration without schedule", nodePool(`disruption: {budgets: [{nodes: "1", duration: 10m}]}`),
			[]string{"spec.disruption.budgets", "'schedule' must be set with 'duration'"}},
		{"schedule without duration", nodePool(`disruption: {budgets: [{nodes: "1", schedule: "@daily"}]}`),
			[]string{"spec.disruption.budgets", "'schedule' must be set with 'duration'"}},
		{"malformed cron", nodePool(`disruption: {budgets: [{nodes: "1", schedule: "every day at 9", duration: 1h}]}`),
			[]string{"spec.disruption.budgets[0].schedule"}},
		{"cron field out of range", nodePool(`disruption: {budgets: [{nodes: "1", schedule: "61 9 * * *", duration: 1h}]}`),
			[]string{"spec.disruption.budgets[0].schedule", "cron"}},
		{"unknown operator", nodePool(`template: {spec: {nodeClassRef: {group: nodewright.dev, kind: KWOKNodeClass, name: default}, requirements: [{key: kubernetes.io/arch, operator: Equals, values: [amd64]}]}}`),
			[]string{"spec.template.spec.requirements[0].operator", `Unsupported value: "Equals"`}},
		{"minValues above the values given", nodePool(`template: {spec: {nodeClassRef: {group: nodewright.dev, kind: KWOKNodeClass, name: default}, requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [a, b], minValues: 3}]}}`),
			[]string{"spec.template.spec.requirements", "minValues"}},
		{"weight 0", nodePool(`weight: 0`), []string{"spec.weight", "greater than or equal to 1"}},
		{"weight 101", nodePool(`weight: 101`), []string{"spec.weight", "less than or equal to 100"}},
		{"expireAfter soon", nodePool(`template: {spec: {expireAfter: soon, nodeClassRef: {group: nodewright.dev, kind: KWOKNodeClass, name: default}, requirements: []}}`),
			[]string{"spec.template.spec.expireAfter", "soon"}},
		{"consolidateAfter soon", nodePool(`disruption: {consolidateAfter: soon}`),
			[]string{"spec.disruption.consolidateAfter", "soon"}},
		{"NodeClaim with empty nodeClassRef", `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: bad}
spec: {nodeClassRef: {}, requirements: []}`,
			[]string{"spec.nodeClassRef.group", "spec.nodeClassRef.kind", "spec.nodeClassRef.name", "Required value"}},
		{"NodeClaim with blank nodeClassRef fields", `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: bad}
spec: {nodeClassRef: {group: "", kind: "", name: ""}, requirements: []}`,
			[]string{"spec.nodeClassRef.group", "group may not be empty", "kind may not be empty", "name may not be empty"}},
		{"NodeOverlay with price and priceAdjustment", `
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: bad}
spec: {requirements: [], price: "1.5", priceAdjustment: "-10%"}`,
			[]string{"spec", "cannot set both 'price' and 'priceAdjustment'"}},
		{"NodeOverlay overriding ephemeral-storage", `
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: bad}
spec: {requirements: [], capacity: {ephemeral-storage: 10Gi}}`,
			[]string{"spec.capacity", "only cpu, memory, pods and extended resources"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := decode(t, tc.manifest)
			err := cluster.Client.Create(context.Background(), obj, client.DryRunAll)
			if err == nil {
				t.Fatalf("the API server accepted:\n%s", tc.manifest)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestDefaultsMatchKarpenter checks the defaults a user gets when leaving fields
// out, and that our superset of NodeOverlay (cpu, memory, pods) is accepted.
func TestDefaultsMatchKarpenter(t *testing.T) {
	obj := decode(t, nodePool(`disruption: {consolidationPolicy: WhenEmpty}`))
	if err := cluster.Client.Create(context.Background(), obj, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"spec.disruption.consolidateAfter":    "0s",
		"spec.disruption.budgets":             []any{map[string]any{"nodes": "10%"}},
		"spec.template.spec.expireAfter":      "720h",
		"spec.disruption.consolidationPolicy": "WhenEmpty",
	} {
		got, _, _ := unstructured.NestedFieldCopy(obj.Object, strings.Split(path, ".")...)
		if !equalJSON(got, want) {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}

	overlay := decode(t, `
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: real-memory}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [r5a.8xlarge]}]
  capacity: {memory: 256Gi, cpu: "32", pods: "234", example.com/gpu: "1"}`)
	if err := cluster.Client.Create(context.Background(), overlay, client.DryRunAll); err != nil {
		t.Errorf("NodeOverlay overriding memory, cpu and pods refused: %v", err)
	}
}

// nodePool returns a valid NodePool manifest with spec fields overridden by the
// given YAML flow mapping entries.
func nodePool(override string) string {
	base := map[string]any{
		"template": map[string]any{"spec": map[string]any{
			"nodeClassRef": map[string]any{"group": "nodewright.dev", "kind": "KWOKNodeClass", "name": "default"},
			"requirements": []any{},
		}},
	}
	var o map[string]any
	if err := yaml.Unmarshal([]byte("{"+override+"}"), &o); err != nil {
		panic(err)
	}
	for k, v := range o {
		base[k] = v
	}
	spec, _ := yaml.Marshal(base)
	return "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: test}\nspec:\n" + indent(string(spec))
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = "  " + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("bad test manifest: %v\n%s", err, manifest)
	}
	return u
}

func decodeAll(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "${CLUSTER_NAME}", "test-cluster")
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatalf("%s: %v", file, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	return string(x) == string(y)
}

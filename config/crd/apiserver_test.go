package crd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/testcluster"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

// TestKarpenterExampleNodePoolsAccepted creates every NodePool and EC2NodeClass
// document of the AWS provider's examples against a real API server with our
// CRDs. Every example file holds at least one of each.
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
	count := map[string]int{}
	for _, f := range files {
		for i, obj := range decodeAll(t, f) {
			kind := obj.GetKind()
			if kind != "NodePool" && kind != "EC2NodeClass" {
				t.Errorf("%s document %d: unexpected kind %q", f, i, kind)
				continue
			}
			count[kind]++
			t.Run(filepath.Base(f)+"/"+kind+"/"+obj.GetName(), func(t *testing.T) {
				if err := cluster.Client.Create(context.Background(), obj, client.DryRunAll); err != nil {
					t.Errorf("%s document %d (%s %s) refused: %v", f, i, kind, obj.GetName(), err)
				}
			})
		}
	}
	for _, kind := range []string{"NodePool", "EC2NodeClass"} {
		if count[kind] < len(files) {
			t.Errorf("found %d %ss in %d files; expected at least one per file", count[kind], kind, len(files))
		}
	}
}

// badInput is a manifest the API server must refuse, with substrings its
// error must contain: the field path and the rule's message.
type badInput struct {
	name     string
	manifest string
	want     []string
}

// TestBadInputRefused proves each kind of bad input is refused by the API server
// with a message that names the field.
func TestBadInputRefused(t *testing.T) {
	cases := []badInput{
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
	cases = append(cases, badEC2NodeClasses...)
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

// badEC2NodeClasses are EC2NodeClasses that Karpenter's AWS provider refuses.
var badEC2NodeClasses = []badInput{
	{"EC2NodeClass alias with another term", ec2NodeClass(`amiSelectorTerms: [{alias: al2023@latest}, {id: ami-0123456789abcdef0}]`),
		[]string{"spec.amiSelectorTerms", "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"}},
	{"EC2NodeClass alias with another field", ec2NodeClass(`amiSelectorTerms: [{alias: al2023@latest, owner: self}]`),
		[]string{"spec.amiSelectorTerms", "'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"}},
	{"EC2NodeClass pinned Windows alias", ec2NodeClass(`amiSelectorTerms: [{alias: windows2022@v1}]`),
		[]string{"spec.amiSelectorTerms[0].alias", "windows families may only specify version 'latest'"}},
	{"EC2NodeClass unknown alias family", ec2NodeClass(`amiSelectorTerms: [{alias: ubuntu@latest}]`),
		[]string{"spec.amiSelectorTerms[0].alias", "family is not supported"}},
	{"EC2NodeClass amiFamily other than the alias's", ec2NodeClass(`amiFamily: AL2023, amiSelectorTerms: [{alias: bottlerocket@latest}]`),
		[]string{"spec", "if set, amiFamily must be 'Bottlerocket' or 'Custom' when using a Bottlerocket alias"}},
	{"EC2NodeClass without amiFamily or alias", ec2NodeClass(`amiSelectorTerms: [{id: ami-0123456789abcdef0}]`),
		[]string{"spec", "must specify amiFamily if amiSelectorTerms does not contain an alias"}},
	{"EC2NodeClass role and instanceProfile", ec2NodeClass(`instanceProfile: KarpenterNodeInstanceProfile`),
		[]string{"spec", "must specify exactly one of ['role', 'instanceProfile']"}},
	{"EC2NodeClass two root volumes", ec2NodeClass(`blockDeviceMappings: [` +
		`{deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 20Gi}}, ` +
		`{deviceName: /dev/xvdb, rootVolume: true, ebs: {volumeSize: 100Gi}}]`),
		[]string{"spec.blockDeviceMappings", "must have only one blockDeviceMappings with rootVolume"}},
	{"EC2NodeClass volume too large", ec2NodeClass(`blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 65T}}]`),
		[]string{"spec.blockDeviceMappings[0].ebs.volumeSize", "65T"}},
	{"EC2NodeClass 31 subnet terms", ec2NodeClass(`subnetSelectorTerms: [` + subnetTerms(31) + `]`),
		[]string{"spec.subnetSelectorTerms", "must have at most 30 items"}},
	{"EC2NodeClass empty subnet term", ec2NodeClass(`subnetSelectorTerms: [{}]`),
		[]string{"spec.subnetSelectorTerms", "expected at least one, got none, ['tags', 'id']"}},
	{"EC2NodeClass no subnet terms", ec2NodeClass(`subnetSelectorTerms: []`),
		[]string{"spec.subnetSelectorTerms", "subnetSelectorTerms cannot be empty"}},
	{"EC2NodeClass restricted tag", ec2NodeClass(`tags: {karpenter.sh/nodepool: default}`),
		[]string{"spec.tags", "tag contains a restricted tag matching karpenter.sh/nodepool"}},
	{"EC2NodeClass unknown eviction signal", ec2NodeClass(`kubelet: {evictionHard: {memory.free: 100Mi}}`),
		[]string{"spec.kubelet.evictionHard", "valid keys for evictionHard are"}},
	{"EC2NodeClass eviction threshold over 100%", ec2NodeClass(`kubelet: {evictionHard: {memory.available: 101%}}`),
		[]string{"spec.kubelet.evictionHard.memory.available", "101%"}},
	{"EC2NodeClass kubeReserved not a quantity", ec2NodeClass(`kubelet: {kubeReserved: {memory: lots}}`),
		[]string{"spec.kubelet.kubeReserved.memory", "lots"}},
	{"EC2NodeClass soft eviction without grace period", ec2NodeClass(`kubelet: {evictionSoft: {memory.available: 5%}}`),
		[]string{"spec.kubelet", "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod"}},
	{"EC2NodeClass metadata hop limit 0", ec2NodeClass(`metadataOptions: {httpPutResponseHopLimit: 0}`),
		[]string{"spec.metadataOptions.httpPutResponseHopLimit", "greater than or equal to 1"}},
}

// TestEC2NodeClassDefaults creates an EC2NodeClass for real and reads it back
// through the Go types: the instance metadata options Karpenter defaults are
// filled in, whole or field by field.
func TestEC2NodeClassDefaults(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := awsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name                   string
		override               string
		endpoint, ipv6, tokens string
		hopLimit               int64
	}{
		{"left out", ``, "enabled", "disabled", "required", 1},
		{"partly set", `metadataOptions: {httpTokens: optional}`, "enabled", "disabled", "optional", 1},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			obj := decode(t, ec2NodeClass(tc.override))
			obj.SetName(fmt.Sprintf("defaults-%d", i))
			if err := c.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Delete(ctx, obj) }()
			got := &awsv1.EC2NodeClass{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatal(err)
			}
			m := got.Spec.MetadataOptions
			if m == nil || m.HTTPEndpoint == nil || m.HTTPProtocolIPv6 == nil || m.HTTPTokens == nil || m.HTTPPutResponseHopLimit == nil {
				t.Fatalf("metadataOptions not defaulted: %+v", m)
			}
			if *m.HTTPEndpoint != tc.endpoint || *m.HTTPProtocolIPv6 != tc.ipv6 || *m.HTTPTokens != tc.tokens || *m.HTTPPutResponseHopLimit != tc.hopLimit {
				t.Errorf("metadataOptions = {httpEndpoint: %s, httpProtocolIPv6: %s, httpTokens: %s, httpPutResponseHopLimit: %d}, want {%s, %s, %s, %d}",
					*m.HTTPEndpoint, *m.HTTPProtocolIPv6, *m.HTTPTokens, *m.HTTPPutResponseHopLimit, tc.endpoint, tc.ipv6, tc.tokens, tc.hopLimit)
			}
			// The loader's defaulting (simulate, explain -f) gives the same.
			local := decodeEC2NodeClass(t, ec2NodeClass(tc.override))
			awsv1.SetDefaults(local)
			if !equality.Semantic.DeepEqual(local.Spec.MetadataOptions, m) {
				t.Errorf("SetDefaults gives metadataOptions %+v, the API server %+v", local.Spec.MetadataOptions, m)
			}
			if got.AMIFamily() != awsv1.AMIFamilyAL2023 {
				t.Errorf("AMIFamily() = %q, want %q", got.AMIFamily(), awsv1.AMIFamilyAL2023)
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
	return manifest("karpenter.sh/v1", "NodePool", map[string]any{
		"template": map[string]any{"spec": map[string]any{
			"nodeClassRef": map[string]any{"group": "nodewright.dev", "kind": "KWOKNodeClass", "name": "default"},
			"requirements": []any{},
		}},
	}, override)
}

// ec2NodeClass returns a valid EC2NodeClass manifest with spec fields
// overridden by the given YAML flow mapping entries.
func ec2NodeClass(override string) string {
	return manifest("karpenter.k8s.aws/v1", "EC2NodeClass", map[string]any{
		"role":                       "KarpenterNodeRole-test",
		"amiSelectorTerms":           []any{map[string]any{"alias": "al2023@latest"}},
		"subnetSelectorTerms":        []any{map[string]any{"tags": map[string]any{"karpenter.sh/discovery": "test"}}},
		"securityGroupSelectorTerms": []any{map[string]any{"tags": map[string]any{"karpenter.sh/discovery": "test"}}},
	}, override)
}

// manifest writes an object named test whose spec is base with the
// override's top-level entries replacing base's.
func manifest(apiVersion, kind string, base map[string]any, override string) string {
	var o map[string]any
	if err := yaml.Unmarshal([]byte("{"+override+"}"), &o); err != nil {
		panic(err)
	}
	for k, v := range o {
		base[k] = v
	}
	spec, _ := yaml.Marshal(base)
	return "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata: {name: test}\nspec:\n" + indent(string(spec))
}

// subnetTerms returns n subnet selector terms as YAML flow sequence entries.
func subnetTerms(n int) string {
	terms := make([]string, n)
	for i := range terms {
		terms[i] = fmt.Sprintf("{id: subnet-%04d}", i)
	}
	return strings.Join(terms, ", ")
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

// decodeEC2NodeClass reads a manifest as the typed object, without a server.
func decodeEC2NodeClass(t *testing.T, doc string) *awsv1.EC2NodeClass {
	t.Helper()
	nc := &awsv1.EC2NodeClass{}
	if err := yaml.UnmarshalStrict([]byte(doc), nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

package kwok

import (
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/instancetype"
)

const ciliumTaintKey = "node.cilium.io/agent-not-ready"

func TestNodeMatchesNodeClaim(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	class := e.nodeClass(&kwokv1alpha1.KWOKFaults{AgentTaints: []kwokv1alpha1.KWOKAgentTaint{
		{Key: ciliumTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule, RemoveAfter: duration(20 * time.Second)},
		{Key: "example.com/storage", Effect: corev1.TaintEffectNoExecute},
	}})
	claim := e.claim(class,
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge"),
		req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b"),
		req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand"),
		req("example.com/tier", corev1.NodeSelectorOpIn, "gold"),
		req("example.com/any", corev1.NodeSelectorOpIn, "a", "b"),
		req("example.com/not", corev1.NodeSelectorOpNotIn, "c"))
	claim.Labels["team"] = "web"
	claim.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	// The NodePool declares the agent's taint as a startup taint too.
	claim.Spec.StartupTaints = []corev1.Taint{{Key: ciliumTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	out := e.mustLaunch(claim)
	node := e.mustNode(claim.Name)

	if node.Spec.ProviderID != "kwok://"+claim.Name || out.Status.ProviderID != node.Spec.ProviderID {
		t.Errorf("Node providerID %q, claim %q", node.Spec.ProviderID, out.Status.ProviderID)
	}
	for k, want := range map[string]string{KWOKNodeAnnotation: "fake", NodeClaimAnnotation: claim.Name,
		CreatedAtAnnotation: epoch.Format(time.RFC3339Nano), ImageAnnotation: "img-1"} {
		if got := node.Annotations[k]; got != want {
			t.Errorf("annotation %s = %q, want %q", k, got, want)
		}
	}
	wantLabels := map[string]string{
		karpv1.NodePoolLabelKey: "pool", "team": "web", "example.com/tier": "gold",
		corev1.LabelInstanceTypeStable: "m5.xlarge", corev1.LabelTopologyZone: "zone-b", karpv1.CapacityTypeLabelKey: "on-demand",
		corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", corev1.LabelHostname: claim.Name,
		LabelInstanceFamily: "m5", LabelInstanceSize: "xlarge", LabelInstanceCPU: "4", LabelInstanceMemory: "16384", LabelInstanceGPU: "0",
	}
	if !reflect.DeepEqual(node.Labels, wantLabels) {
		t.Errorf("labels\n got %v\nwant %v", node.Labels, wantLabels)
	}
	wantTaints := []corev1.Taint{
		{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule},
		{Key: ciliumTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		karpv1.UnregisteredNoExecuteTaint,
		{Key: "example.com/storage", Effect: corev1.TaintEffectNoExecute},
	}
	if got := withoutAdmissionTaints(node.Spec.Taints); !reflect.DeepEqual(got, wantTaints) {
		t.Errorf("taints\n got %v\nwant %v", got, wantTaints)
	}
	if len(node.Status.Conditions) != 0 {
		t.Errorf("conditions %v; kwok, not the provider, reports Ready", node.Status.Conditions)
	}
	if ni := node.Status.NodeInfo; ni.Architecture != "amd64" || ni.OperatingSystem != "linux" {
		t.Errorf("nodeInfo %+v", ni)
	}
}

// TestNodeAllocatableMatchesModel: with the real VM overhead equal to the
// modelled one, a Node has exactly the allocatable the instance type
// promises; with another, memory capacity moves by the difference.
func TestNodeAllocatableMatchesModel(t *testing.T) {
	cases := []struct {
		name         string
		instanceType string
		actual       *float64
		// wantMemory is the Node's memory capacity.
		wantMemory string
		wantGPU    int64
	}{
		{name: "default overhead", instanceType: "m5.xlarge", wantMemory: "15155Mi"}, // 16384Mi - 1229Mi (7.5%)
		{name: "GPU type", instanceType: "g4dn.xlarge", wantMemory: "15155Mi", wantGPU: 1},
		{name: "smaller real overhead", instanceType: "m5.xlarge", actual: ptr(0.05), wantMemory: "15564Mi"}, // 16384Mi - 820Mi (5%)
		{name: "no real overhead", instanceType: "r5a.8xlarge", actual: ptr(0.0), wantMemory: "256Gi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, ProviderOptions{ActualVMMemoryOverheadPercent: tc.actual})
			claim := e.mustLaunch(e.claim(e.nodeClass(nil), req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, tc.instanceType)))
			node := e.mustNode(claim.Name)
			its, err := e.p.InstanceTypes(e.ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var model *instancetype.InstanceType
			for _, it := range its {
				if it.Name == tc.instanceType {
					model = it
				}
			}
			capacity, allocatable := node.Status.Capacity, node.Status.Allocatable
			if m := capacity[corev1.ResourceMemory]; m.Cmp(resource.MustParse(tc.wantMemory)) != 0 {
				t.Errorf("memory capacity %s, want %s", m.String(), tc.wantMemory)
			}
			if g := capacity["nvidia.com/gpu"]; g.Value() != tc.wantGPU {
				t.Errorf("GPUs %d, want %d", g.Value(), tc.wantGPU)
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
				if want := model.Capacity[r]; capacity.Name(r, "").Cmp(want) != 0 {
					t.Errorf("%s capacity %s, want %s", r, capacity.Name(r, ""), want.String())
				}
			}
			if tc.actual == nil {
				if !equalResources(allocatable, model.Allocatable()) {
					t.Errorf("allocatable %v, the model says %v", allocatable, model.Allocatable())
				}
				return
			}
			// Allocatable memory moves by what the Node's memory differs from
			// the model's capacity after VM overhead; the rest is the model's.
			modelAlloc := model.Allocatable()
			capGap := mustSub(capacity[corev1.ResourceMemory], mustSub(model.Capacity[corev1.ResourceMemory], model.VMMemoryOverhead()))
			allocGap := mustSub(allocatable[corev1.ResourceMemory], modelAlloc[corev1.ResourceMemory])
			if capGap.Sign() <= 0 || allocGap.Cmp(capGap) != 0 {
				t.Errorf("allocatable memory differs from the model by %s, capacity by %s", allocGap.String(), capGap.String())
			}
			for r, q := range modelAlloc {
				if r != corev1.ResourceMemory && allocatable.Name(r, "").Cmp(q) != 0 {
					t.Errorf("%s allocatable %s, the model says %s", r, allocatable.Name(r, ""), q.String())
				}
			}
		})
	}
}

// withoutAdmissionTaints drops the not-ready taint that the API server's
// TaintNodesByCondition admission puts on every new Node (and the node
// lifecycle controller removes once kwok reports it Ready).
func withoutAdmissionTaints(taints []corev1.Taint) []corev1.Taint {
	return slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
}

func mustSub(a, b resource.Quantity) resource.Quantity {
	a = a.DeepCopy()
	a.Sub(b)
	return a
}

func ptr[T any](v T) *T { return &v }

// TestBuildNodeSkipsRestrictedRequirementLabels: a Node's hostname is its
// own and its lifecycle labels are earned, whatever the claim asks.
func TestBuildNodeSkipsRestrictedRequirementLabels(t *testing.T) {
	p, err := New(cluster.Client, ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{
			corev1.LabelTopologyZone: "zone-a", karpv1.CapacityTypeLabelKey: "spot", karpv1.NodeInitializedLabelKey: "true"}},
		Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
			req(corev1.LabelHostname, corev1.NodeSelectorOpIn, "elsewhere"),
			req(karpv1.NodeRegisteredLabelKey, corev1.NodeSelectorOpIn, "true"),
		}},
	}
	node, err := p.buildNode(claim, p.byName["c5.large"], kwokv1alpha1.KWOKFaults{}, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels[corev1.LabelHostname] != "n1" {
		t.Errorf("hostname %q", node.Labels[corev1.LabelHostname])
	}
	for _, k := range []string{karpv1.NodeRegisteredLabelKey, karpv1.NodeInitializedLabelKey} {
		if _, ok := node.Labels[k]; ok {
			t.Errorf("label %s copied", k)
		}
	}
	if _, err := p.buildNode(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}, p.byName["c5.large"], kwokv1alpha1.KWOKFaults{}, epoch); err == nil {
		t.Error("a claim without zone and capacity type labels made a Node")
	}
}

package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
	"github.com/nodewright/nodewright/internal/workload"
)

// offeredAs is one instance type with the given offerings, for cases the
// built-in catalog, where every type is offered everywhere, cannot show.
func offeredAs(offerings ...instancetype.Offering) []*instancetype.InstanceType {
	return []*instancetype.InstanceType{{
		Name:         "m5.large",
		Requirements: workload.Requirements("m5.large", "amd64", offerings),
		Capacity:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("29")},
		Offerings:    offerings,
	}}
}

// A NodePool whose requirements leave no instance type said only "no
// instance type with an available offering meets the NodePool's
// requirements", and a user with a typo in one value of one requirement
// had to guess which. The reason names the requirement to blame and what
// the catalog has instead, the combination to blame when no requirement
// alone is, or, when types do match, that their offerings are the problem.
func TestExplainNamesTheRequirementThatLeavesNoInstanceType(t *testing.T) {
	builtin := kwok.Build(kwok.BuiltinCatalog(), kwok.Options{VMMemoryOverheadPercent: instancetype.DefaultVMMemoryOverheadPercent})
	in := func(key string, values ...string) *scheduling.Requirement {
		return scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, values...)
	}
	for _, tc := range []struct {
		name   string
		reqs   []*scheduling.Requirement
		labels map[string]string
		types  []*instancetype.InstanceType
		want   string
	}{
		{"a type name with a typo", []*scheduling.Requirement{in(corev1.LabelInstanceTypeStable, "m5.xlarg")}, nil, builtin,
			"node.kubernetes.io/instance-type In [m5.xlarg] matches no instance type: did you mean m5.xlarge? (nearest of 45 known: m5.xlarge, c5.xlarge, m5.2xlarge, m5.4xlarge, m5.8xlarge, ...)"},
		{"a type name no type is near", []*scheduling.Requirement{in(corev1.LabelInstanceTypeStable, "m5.huge")}, nil, builtin,
			"node.kubernetes.io/instance-type In [m5.huge] matches no instance type (nearest of 45 known: m5.large, c5.large, m5.xlarge, r5.large, c5.xlarge, ...)"},
		{"a family with a typo", []*scheduling.Requirement{in(kwok.LabelInstanceFamily, "m9")}, nil, builtin,
			"nodewright.dev/instance-family In [m9] matches no instance type: did you mean m5? (known: c5, c6g, g4dn, m5, m6g, r5, r5a)"},
		{"a zone equally near several", []*scheduling.Requirement{in(corev1.LabelTopologyZone, "zone-z")}, nil, builtin,
			"topology.kubernetes.io/zone In [zone-z] matches no instance type (known: zone-a, zone-b, zone-c)"},
		{"two values, two typos", []*scheduling.Requirement{in(corev1.LabelInstanceTypeStable, "c5.xlarg", "m5.lage")}, nil, builtin,
			"node.kubernetes.io/instance-type In [c5.xlarg m5.lage] matches no instance type: did you mean c5.xlarge for c5.xlarg, m5.large for m5.lage? (nearest of 45 known: c5.xlarge, m5.large, c5.2xlarge, c5.4xlarge, c5.8xlarge, ...)"},
		{"integers out of range", []*scheduling.Requirement{scheduling.NewRequirement(kwok.LabelInstanceCPU, corev1.NodeSelectorOpGt, "100")}, nil, builtin,
			"nodewright.dev/instance-cpu Gt 100 matches no instance type (known: 2, 4, 8, 16, 32, 48, 64)"},
		{"two requirements each to blame", []*scheduling.Requirement{in(corev1.LabelInstanceTypeStable, "m5.xlarg"), in(corev1.LabelArchStable, "arm")}, nil, builtin,
			"kubernetes.io/arch In [arm] matches no instance type (known: amd64, arm64); node.kubernetes.io/instance-type In [m5.xlarg] matches no instance type: did you mean m5.xlarge? (nearest of 45 known: m5.xlarge, c5.xlarge, m5.2xlarge, m5.4xlarge, m5.8xlarge, ...)"},
		{"a combination to blame", []*scheduling.Requirement{in(corev1.LabelInstanceTypeStable, "m5.large", "c5.large"), in(corev1.LabelArchStable, "arm64"), in(corev1.LabelTopologyZone, "zone-a")}, nil, builtin,
			"no instance type meets kubernetes.io/arch In [arm64] and node.kubernetes.io/instance-type In [c5.large m5.large] together, though each alone matches some (14 and 2 instance types)"},
		{"labels that contradict the requirements", []*scheduling.Requirement{in(corev1.LabelTopologyZone, "zone-b")}, map[string]string{corev1.LabelTopologyZone: "zone-a"}, builtin,
			"the NodePool's requirements and labels for topology.kubernetes.io/zone allow no value together"},
		{"allowed offerings out of capacity", []*scheduling.Requirement{in(instancetype.CapacityTypeLabel, "spot")}, nil,
			offeredAs(instancetype.Offering{Zone: "zone-a", CapacityType: "spot", Price: 0.03}, instancetype.Offering{Zone: "zone-a", CapacityType: "on-demand", Price: 0.1, Available: true}),
			"1 instance type(s) meet the requirements (m5.large), but every offering allowed by karpenter.sh/capacity-type In [spot] is unavailable now"},
		{"zone and capacity type never together", []*scheduling.Requirement{in(instancetype.CapacityTypeLabel, "spot"), in(corev1.LabelTopologyZone, "zone-a")}, nil,
			offeredAs(instancetype.Offering{Zone: "zone-b", CapacityType: "spot", Price: 0.03, Available: true}, instancetype.Offering{Zone: "zone-a", CapacityType: "on-demand", Price: 0.1, Available: true}),
			"1 instance type(s) meet the requirements (m5.large), but none has an offering allowed by topology.kubernetes.io/zone In [zone-a] and karpenter.sh/capacity-type In [spot] together (available zone/capacity type: zone-a/on-demand, zone-b/spot)"},
		{"no instance types at all", nil, nil, nil,
			"the NodePool has no instance types to choose from: check its NodeClass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := solver.NodePool{Name: "general", Requirements: scheduling.NewRequirements(tc.reqs...), Labels: tc.labels, InstanceTypes: tc.types}
			p := pod("web", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
			r, err := solver.ExplainPod(&solver.Input{NodePools: []solver.NodePool{np}, Pods: []*corev1.Pod{p}}, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.NodePools) != 1 || r.NodePools[0].Reason != tc.want {
				t.Errorf("got %+v\nwant reason %q", r.NodePools, tc.want)
			}
		})
	}
}

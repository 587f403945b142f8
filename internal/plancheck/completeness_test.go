package plancheck_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
)

// giveUp lists pods as unschedulable in plan.
func giveUp(plan *solver.Plan, ps ...*corev1.Pod) *solver.Plan {
	for _, p := range ps {
		plan.Unschedulable = append(plan.Unschedulable, solver.Unschedulable{Pod: p})
	}
	return plan
}

// freshCase gives up on pod with no nodes and one NodePool that has types.
func freshCase(pool solver.NodePool, dss []*appsv1.DaemonSet, p *corev1.Pod) func() (*solver.Input, *solver.Plan) {
	return func() (*solver.Input, *solver.Plan) {
		in := &solver.Input{NodePools: []solver.NodePool{pool}, DaemonSets: dss, Pods: []*corev1.Pod{p}}
		return in, giveUp(&solver.Plan{}, p)
	}
}

// spreadCase: node n1 in z1 holds s-0, placed by the plan, and n2 in z2 is
// full; s-1, with a zone spread of maxSkew 1, is given up on, and the pool's
// one type is offered in zone.
func spreadCase(zone string) func() (*solver.Input, *solver.Plan) {
	return func() (*solver.Input, *solver.Plan) {
		ps := pods(2, "s", "1", withLabels("app", "s"), withSpread(zoneKey, 1, nil, "app", "s"))
		pool := solver.NodePool{Name: "default", InstanceTypes: []*instancetype.InstanceType{itype("c4", 4, zone)}}
		full := existing("n2", "z2")
		full.Allocatable = resources("500m", "8Gi", 10)
		in := &solver.Input{NodePools: []solver.NodePool{pool}, Nodes: []solver.Node{existing("n1", "z1"), full}, Pods: ps}
		return in, giveUp(onNodes(ps[:1], "n1"), ps[1])
	}
}

// requirements is key In values.
func requirements(key string, values ...string) scheduling.Requirements {
	return scheduling.NewRequirements(scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, values...))
}

func TestCheckCompleteness(t *testing.T) {
	teamTaint := corev1.Taint{Key: "team", Value: "blue", Effect: corev1.TaintEffectNoSchedule}
	runCheckCases(t, []checkCase{
		{
			name: "completeness/fits an existing node",
			build: func() (*solver.Input, *solver.Plan) {
				p := pod("a", "1")
				return &solver.Input{Nodes: threeZones(), Pods: []*corev1.Pod{p}}, giveUp(&solver.Plan{}, p)
			},
			want: "completeness",
		},
		{
			name: "completeness/fits beside the plan's own pods on its new claim",
			build: func() (*solver.Input, *solver.Plan) {
				pool := solver.NodePool{Name: "default", InstanceTypes: smallTypes}
				a, b := pod("a", "1"), pod("b", "1")
				plan := &solver.Plan{NewClaims: []*solver.NewClaim{newClaim(pool, "new-0", nil, smallTypes[1:], a)}}
				onClaim(plan, 0, a)
				return &solver.Input{NodePools: []solver.NodePool{pool}, Pods: []*corev1.Pod{a, b}}, giveUp(plan, b)
			},
			want: "completeness",
		},
		{
			name:  "completeness/fits a fresh node",
			build: freshCase(solver.NodePool{Name: "default", InstanceTypes: smallTypes}, nil, pod("a", "1")),
			want:  "completeness",
		},
		{
			name: "completeness/fits a fresh node once the pool's label narrows",
			build: freshCase(solver.NodePool{Name: "default", InstanceTypes: smallTypes, Requirements: requirements("team", "a", "b")},
				nil, pod("a", "1", withNodeSelector("team", "b"))),
			want: "completeness",
		},
		{
			name:  "completeness/fits a fresh node in the zone the spread needs",
			build: spreadCase("z2"),
			want:  "completeness",
		},
		{
			name:  "valid/too large for every type",
			build: freshCase(solver.NodePool{Name: "default", InstanceTypes: smallTypes}, nil, pod("a", "8")),
		},
		{
			name: "valid/DaemonSet overhead leaves a fresh node too small",
			build: freshCase(solver.NodePool{Name: "default", InstanceTypes: smallTypes[:1]},
				[]*appsv1.DaemonSet{daemonSet("logs", "1500m")}, pod("a", "1")),
		},
		{
			name: "valid/the pool's limits allow no node",
			build: freshCase(solver.NodePool{Name: "default", InstanceTypes: smallTypes,
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
				Usage:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}, nil, pod("a", "1")),
		},
		{
			name:  "valid/the pool's taint is not tolerated",
			build: freshCase(solver.NodePool{Name: "default", InstanceTypes: smallTypes, Taints: []corev1.Taint{teamTaint}}, nil, pod("a", "1")),
		},
		{
			name: "valid/a label the pool does not define",
			build: freshCase(solver.NodePool{Name: "default", InstanceTypes: smallTypes},
				nil, pod("a", "1", withNodeSelector("team", "b"))),
		},
		{
			name: "valid/anti-affinity to a pod the plan placed",
			build: func() (*solver.Input, *solver.Plan) {
				n := existing("n1", "z1")
				a := pod("a", "1", withLabels("app", "a"))
				b := pod("b", "1", withPodAntiAffinity(term(hostKey, "app", "a")))
				return &solver.Input{Nodes: []solver.Node{n}, Pods: []*corev1.Pod{a, b}}, giveUp(onNodes([]*corev1.Pod{a}, "n1"), b)
			},
		},
		{
			name: "valid/zone anti-affinity to a placed pod follows to a fresh node",
			build: func() (*solver.Input, *solver.Plan) {
				n := existing("n1", "z1")
				n.Allocatable = resources("1", "8Gi", 10)
				a := pod("a", "1", withLabels("app", "a"))
				b := pod("b", "1", withPodAntiAffinity(term(zoneKey, "app", "a")))
				pool := solver.NodePool{Name: "default", InstanceTypes: smallTypes}
				in := &solver.Input{NodePools: []solver.NodePool{pool}, Nodes: []solver.Node{n}, Pods: []*corev1.Pod{a, b}}
				return in, giveUp(onNodes([]*corev1.Pod{a}, "n1"), b)
			},
		},
		{
			name:  "valid/spread counts the placed pod, on n1 and on a fresh node in z1",
			build: spreadCase("z1"),
		},
		{
			name: "valid/pod listed twice is a plan mistake only",
			build: func() (*solver.Input, *solver.Plan) {
				p := pod("a", "1")
				return &solver.Input{Nodes: threeZones(), Pods: []*corev1.Pod{p}}, giveUp(&solver.Plan{}, p, p)
			},
			want: "plan",
		},
	})
}

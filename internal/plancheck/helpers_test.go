package plancheck_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
	"github.com/nodewright/nodewright/internal/workload"
)

const (
	zoneKey = corev1.LabelTopologyZone
	hostKey = corev1.LabelHostname
)

func resources(cpu, mem string, pods int64) corev1.ResourceList {
	rl := corev1.ResourceList{}
	if cpu != "" {
		rl[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		rl[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	if pods > 0 {
		rl[corev1.ResourcePods] = *resource.NewQuantity(pods, resource.DecimalSI)
	}
	return rl
}

// pod is a pending pod in namespace default requesting cpu and 100Mi.
func pod(name, cpu string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "app",
			Resources: corev1.ResourceRequirements{Requests: resources(cpu, "100Mi", 0)},
		}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withLabels(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func withNodeSelector(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func withRequiredNodeAffinity(key string, op corev1.NodeSelectorOperator, values ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		affinity(p).NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}},
		}}
	}
}

func withToleration(key string, effect corev1.TaintEffect) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect})
	}
}

func withHostPort(port int32, ip string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, HostIP: ip})
	}
}

func affinity(p *corev1.Pod) *corev1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	return p.Spec.Affinity
}

func term(key string, kv ...string) corev1.PodAffinityTerm {
	ml := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		ml[kv[i]] = kv[i+1]
	}
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: ml}}
}

func withPodAffinity(t corev1.PodAffinityTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.PodAffinity == nil {
			a.PodAffinity = &corev1.PodAffinity{}
		}
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, t)
	}
}

func withPodAntiAffinity(t corev1.PodAffinityTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, t)
	}
}

func withSpread(key string, maxSkew int32, minDomains *int32, kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: minDomains,
			LabelSelector: term(key, kv...).LabelSelector,
		})
	}
}

func withPVC(claim string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}})
	}
}

// existing is an existing node in a zone with 4 CPUs, 8Gi and 10 pods.
func existing(name, zone string, pods ...*corev1.Pod) solver.Node {
	return solver.Node{
		Name:        name,
		Labels:      map[string]string{zoneKey: zone, hostKey: name},
		Allocatable: resources("4", "8Gi", 10),
		Pods:        pods,
	}
}

// threeZones are existing nodes n1, n2, n3 in zones z1, z2, z3.
func threeZones() []solver.Node {
	return []solver.Node{existing("n1", "z1"), existing("n2", "z2"), existing("n3", "z3")}
}

// itype is an instance type with cpu CPUs, 2 GiB per CPU and 10 pods per CPU,
// offered on-demand in the given zones at 0.1 per CPU.
func itype(name string, cpu int64, zones ...string) *instancetype.InstanceType {
	var offerings instancetype.Offerings
	for _, z := range zones {
		offerings = append(offerings, instancetype.Offering{Zone: z, CapacityType: "on-demand", Price: 0.1 * float64(cpu), Available: true})
	}
	return &instancetype.InstanceType{
		Name:         name,
		Requirements: workload.Requirements(name, "amd64", offerings),
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(cpu*2<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(cpu*10, resource.DecimalSI),
		},
		Offerings: offerings,
	}
}

// newClaim is a consistent claim of pool for pods (plus DaemonSet requests
// ds, which may be nil), on the given types.
func newClaim(pool solver.NodePool, hostname string, ds corev1.ResourceList, types []*instancetype.InstanceType, pods ...*corev1.Pod) *solver.NewClaim {
	names := make([]string, len(types))
	for i, it := range types {
		names[i] = it.Name
	}
	reqs := pool.Requirements.Intersect(scheduling.NewRequirements(
		scheduling.NewRequirement("karpenter.sh/nodepool", corev1.NodeSelectorOpIn, pool.Name),
		scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...),
	))
	requests := corev1.ResourceList{}
	add := func(rl corev1.ResourceList) {
		for n, q := range rl {
			sum := requests[n]
			sum.Add(q)
			requests[n] = sum
		}
	}
	for _, p := range pods {
		add(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))
		add(resources("", "", 1))
	}
	add(ds)
	return &solver.NewClaim{NodePool: pool.Name, Requirements: reqs, InstanceTypes: types, Pods: pods, Requests: requests, DaemonSetRequests: ds, Hostname: hostname}
}

// onNodes places pods[i] on nodes[i] (existing nodes).
func onNodes(pods []*corev1.Pod, nodes ...string) *solver.Plan {
	plan := &solver.Plan{}
	for i, p := range pods {
		plan.Placements = append(plan.Placements, solver.Placement{Pod: p, Node: nodes[i], NewClaim: -1})
	}
	return plan
}

func onClaim(plan *solver.Plan, claim int, pods ...*corev1.Pod) {
	for _, p := range pods {
		plan.Placements = append(plan.Placements, solver.Placement{Pod: p, NewClaim: claim})
	}
}

func pods(n int, prefix, cpu string, opts ...func(*corev1.Pod)) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = pod(fmt.Sprintf("%s-%d", prefix, i), cpu, opts...)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

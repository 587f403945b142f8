package plancheck_test

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"runtime/debug"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/plancheck"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
	"github.com/nodewright/nodewright/internal/workload"
)

// FuzzSolve solves small random but valid inputs and checks the plans: the
// solver must not panic or fail, and kube-scheduler must accept every
// placement.
func FuzzSolve(f *testing.F) {
	for _, seed := range []string{
		"",
		"\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
		"\x02\x00\x00\x00\x00\x00\x00\x00\x01\x03\x02\x28",
		"\x03\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x3c",
		"\x04\x00\x00\x00\x00\x00\x00\x00\x00\x05\x01\x10",
		"\x05\x00\x00\x00\x00\x00\x00\x00\x01\x01\x02\x30",
		"\x2a\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3c",
		"\xff\x00\x00\x00\x00\x00\x00\x00\x02\x04\x01\x08",
		"spread and affinity everywhere",
		"\x07\x07\x07\x07\x07\x07\x07\x07\x00\x00\x02\x3c",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := decodeInput(data)
		// The input's random source is seeded with the data's first 8 bytes
		// (little-endian); TestSolveSeeds replays small seeds the same way.
		var seed [8]byte
		copy(seed[:], data)
		t.Logf("seed %d, data %q", binary.LittleEndian.Uint64(seed[:]), data)
		defer func() {
			// Report a panic with the input that caused it, which the
			// fuzzer's own report leaves out.
			if r := recover(); r != nil {
				t.Fatalf("panicked: %v\n%s\ninput:\n%s", r, debug.Stack(), describeInput(in))
			}
		}()
		plan, err := solver.Solve(in)
		if err != nil {
			t.Fatalf("Solve returned an error for valid input: %v\ninput:\n%s", err, describeInput(in))
		}
		if vs := plancheck.Check(in, plan); len(vs) > 0 {
			t.Fatalf("%d violations:\n%s\nplan:\n%s\ninput:\n%s", len(vs), join(vs), describePlan(plan), describeInput(in))
		}
	})
}

// fuzzInput reads the fuzz bytes: the first 8 seed a math/rand source, the
// next few choose the input's shape directly (so the fuzzer can steer it),
// and the source decides the rest.
type fuzzInput struct {
	data []byte
	r    *rand.Rand
}

// field returns data[8+i] mod n, or a random value below n when the data is
// too short.
func (d *fuzzInput) field(i, n int) int {
	if 8+i < len(d.data) {
		return int(d.data[8+i]) % n
	}
	return d.r.Intn(n)
}

func (d *fuzzInput) chance(p float64) bool { return d.r.Float64() < p }

func (d *fuzzInput) pick(vs ...string) string { return vs[d.r.Intn(len(vs))] }

// subset returns 1..len(vs) distinct values of vs, in order.
func (d *fuzzInput) subset(vs []string) []string {
	for {
		var out []string
		for _, v := range vs {
			if d.chance(0.5) {
				out = append(out, v)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
}

var (
	fuzzZones     = workload.Zones
	fuzzArchs     = []string{"amd64", "arm64"}
	fuzzTeamTaint = corev1.Taint{Key: "team", Value: "blue", Effect: corev1.TaintEffectNoSchedule}
)

func decodeInput(data []byte) *solver.Input {
	var seed [8]byte
	copy(seed[:], data)
	d := &fuzzInput{data: data, r: rand.New(rand.NewSource(int64(binary.LittleEndian.Uint64(seed[:]))))}
	// Pods live in "default" and "other"; namespaceSelectors tell them apart
	// by label.
	in := &solver.Input{Namespaces: []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"env": "prod"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"env": "dev"}}},
	}}
	nPools := 1 + d.field(0, 3)
	nNodes := d.field(1, 6)
	nDaemons := d.field(2, 3)
	nPods := 1 + d.field(3, 60)
	for i := 0; i < nPools; i++ {
		in.NodePools = append(in.NodePools, d.pool(i))
	}
	for i := 0; i < nNodes; i++ {
		in.Nodes = append(in.Nodes, d.node(i, in.NodePools))
	}
	for i := range in.NodePools {
		d.limits(&in.NodePools[i])
	}
	for i := 0; i < nDaemons; i++ {
		in.DaemonSets = append(in.DaemonSets, d.daemonSet(i))
	}
	for len(in.Pods) < nPods {
		in.Pods = append(in.Pods, d.workload(len(in.Pods), nPods-len(in.Pods))...)
	}
	return in
}

func (d *fuzzInput) pool(i int) solver.NodePool {
	p := solver.NodePool{Name: fmt.Sprintf("pool-%d", i), Weight: int32(d.r.Intn(3) * 10), Requirements: scheduling.Requirements{}}
	if d.chance(0.2) {
		p.Taints = []corev1.Taint{fuzzTeamTaint}
	}
	if d.chance(0.25) {
		p.Requirements.Add(scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, d.subset(fuzzZones)...))
	}
	if d.chance(0.2) {
		p.Requirements.Add(scheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, d.pick(fuzzArchs...)))
	}
	if d.chance(0.2) {
		p.Labels = map[string]string{"pool-label": p.Name}
		p.Requirements.Add(scheduling.NewRequirement("pool-label", corev1.NodeSelectorOpIn, p.Name))
	}
	n := 1 + d.r.Intn(40)
	if d.chance(0.5) {
		all := workload.BenchmarkInstanceTypes(40)
		for _, j := range d.r.Perm(40)[:n] {
			p.InstanceTypes = append(p.InstanceTypes, all[j])
		}
	} else {
		for j := 0; j < n; j++ {
			p.InstanceTypes = append(p.InstanceTypes, d.instanceType(fmt.Sprintf("p%d-t%d", i, j)))
		}
	}
	return p
}

// limits maybe caps a pool's CPU or nodes a little above what its existing
// nodes use, so that the cap binds during the solve; now and then below it,
// as after someone lowers a limit.
func (d *fuzzInput) limits(p *solver.NodePool) {
	headroom := int64(d.r.Intn(10))
	if d.chance(0.1) {
		headroom = -1
	}
	switch d.r.Intn(6) {
	case 0:
		used := p.Usage[corev1.ResourceCPU]
		p.Limits = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(max(0, used.Value()+8*headroom), resource.DecimalSI)}
	case 1:
		used := p.Usage["nodes"]
		p.Limits = corev1.ResourceList{"nodes": *resource.NewQuantity(max(0, used.Value()+headroom), resource.DecimalSI)}
	}
}

func (d *fuzzInput) instanceType(name string) *instancetype.InstanceType {
	cpu := int64(1 << d.r.Intn(5))
	mem := cpu * int64(1+d.r.Intn(8)) << 30
	var offerings instancetype.Offerings
	for _, z := range d.subset(fuzzZones) {
		for _, ct := range d.subset([]string{"spot", "on-demand"}) {
			price := float64(cpu)*0.04 + float64(mem>>30)*0.005
			if ct == "spot" {
				price *= 0.4 + d.r.Float64()*0.3
			}
			offerings = append(offerings, instancetype.Offering{Zone: z, CapacityType: ct, Price: price, Available: d.chance(0.85)})
		}
	}
	return &instancetype.InstanceType{
		Name:         name,
		Requirements: workload.Requirements(name, d.pick(fuzzArchs...), offerings),
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(int64(8+d.r.Intn(100)), resource.DecimalSI),
		},
		Overhead: instancetype.Overhead{
			VMMemoryPercent: instancetype.DefaultVMMemoryOverheadPercent,
			KubeReserved:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("80m"), corev1.ResourceMemory: resource.MustParse("200Mi")},
		},
		Offerings: offerings,
	}
}

func (d *fuzzInput) node(i int, pools []solver.NodePool) solver.Node {
	name := fmt.Sprintf("node-%d", i)
	n := solver.Node{
		Name: name,
		Labels: map[string]string{
			corev1.LabelTopologyZone: d.pick(fuzzZones...),
			corev1.LabelArchStable:   d.pick(fuzzArchs...),
			corev1.LabelOSStable:     "linux",
			corev1.LabelHostname:     name,
		},
		Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(1+d.r.Intn(16))*1000-100, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(2+d.r.Intn(30))<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(int64(5+d.r.Intn(60)), resource.DecimalSI),
		},
	}
	if d.chance(0.6) {
		pool := &pools[d.r.Intn(len(pools))]
		n.NodePool = pool.Name
		n.Labels["karpenter.sh/nodepool"] = pool.Name
		for k, v := range pool.Labels {
			n.Labels[k] = v
		}
		n.Taints = append(n.Taints, pool.Taints...)
		if pool.Usage == nil {
			pool.Usage = corev1.ResourceList{}
		}
		for res, q := range n.Allocatable {
			sum := pool.Usage[res]
			sum.Add(q)
			pool.Usage[res] = sum
		}
		nodes := pool.Usage["nodes"]
		nodes.Add(resource.MustParse("1"))
		pool.Usage["nodes"] = nodes
	}
	switch {
	case d.chance(0.2):
		n.InFlight = true
		n.StartupTaints = []corev1.Taint{{Key: "startup", Effect: corev1.TaintEffectNoSchedule}}
		n.Taints = append(n.Taints, n.StartupTaints[0], corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
	case d.chance(0.1):
		n.Deleting = true
	}
	// Existing pods: small, so they fit what the node has.
	for j := d.r.Intn(4); j > 0; j-- {
		p := d.pod(fmt.Sprintf("%s-pod-%d", name, j), false)
		p.Spec.Containers[0].Resources.Requests = resources("100m", "128Mi", 0)
		n.Pods = append(n.Pods, p)
	}
	return n
}

func (d *fuzzInput) daemonSet(i int) *appsv1.DaemonSet {
	p := pod("tmpl", fmt.Sprintf("%dm", 50+d.r.Intn(450)))
	p.Labels = map[string]string{"app": d.pick("a", "b", "ds")}
	if d.chance(0.4) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpExists}}
	}
	if d.chance(0.3) {
		p.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: d.pick(fuzzArchs...)}
	}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ds-%d", i), Namespace: "kube-system"},
		Spec:       appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels}, Spec: p.Spec}},
	}
}

// workload makes 1-8 (at most max) replicas of one random pod template, as a
// Deployment would: replicas sharing constraints is what exercises
// self-affinity, anti-affinity and spread.
func (d *fuzzInput) workload(first, max int) []*corev1.Pod {
	n := min(1+d.r.Intn(8), max)
	tmpl := d.pod("tmpl", true)
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = tmpl.DeepCopy()
		out[i].Name = fmt.Sprintf("pod-%d", first+i)
	}
	return out
}

// pod is a random pod; constrained adds the scheduling constraints pending
// pods get.
func (d *fuzzInput) pod(name string, constrained bool) *corev1.Pod {
	p := pod(name, fmt.Sprintf("%dm", 50+d.r.Intn(1950)))
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = *resource.NewQuantity(int64(64+d.r.Intn(4000))<<20, resource.BinarySI)
	p.Labels = map[string]string{"app": d.pick("a", "b", "c")}
	if d.chance(0.5) {
		p.Labels["tier"] = d.pick("x", "y")
	}
	if d.chance(0.1) {
		p.Namespace = "other"
	}
	if !constrained {
		if d.chance(0.2) {
			withPodAntiAffinity(d.term())(p)
		}
		return p
	}
	if d.chance(0.15) {
		if d.chance(0.5) {
			withNodeSelector(corev1.LabelTopologyZone, d.pick(fuzzZones...))(p)
		} else {
			withNodeSelector(corev1.LabelArchStable, d.pick(fuzzArchs...))(p)
		}
	}
	if d.chance(0.3) {
		withToleration("team", "")(p)
	}
	if d.chance(0.1) {
		withHostPort([]int32{8080, 9090}[d.r.Intn(2)], "")(p)
	}
	if d.chance(0.15) {
		if d.chance(0.5) {
			withRequiredNodeAffinity(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, d.subset(fuzzZones)...)(p)
		} else {
			withRequiredNodeAffinity(corev1.LabelArchStable, corev1.NodeSelectorOpNotIn, d.pick(fuzzArchs...))(p)
		}
	}
	if d.chance(0.15) {
		affinity(p).NodeAffinity = orNew(affinity(p).NodeAffinity)
		affinity(p).NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{{
			Weight: int32(1 + d.r.Intn(100)),
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{d.pick(fuzzZones...)},
			}}},
		}}
	}
	for k := d.r.Intn(3); k > 0 && d.chance(0.5); k-- {
		c := corev1.TopologySpreadConstraint{
			MaxSkew:           int32(1 + d.r.Intn(3)),
			TopologyKey:       d.pick(corev1.LabelTopologyZone, corev1.LabelHostname),
			WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:     d.selector(p),
		}
		if d.chance(0.3) {
			c.WhenUnsatisfiable = corev1.ScheduleAnyway
		} else if d.chance(0.2) {
			c.MinDomains = ptr(int32(1 + d.r.Intn(4)))
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
	if d.chance(0.2) {
		t := d.term()
		if d.chance(0.5) {
			t.LabelSelector = d.selector(p) // often itself: co-locate replicas
		}
		a := affinity(p)
		a.PodAffinity = &corev1.PodAffinity{}
		if d.chance(0.5) {
			a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{t}
		} else {
			a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 50, PodAffinityTerm: t}}
		}
	}
	if d.chance(0.2) {
		t := d.term()
		if d.chance(0.5) {
			t.LabelSelector = d.selector(p)
		}
		a := affinity(p)
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		if d.chance(0.6) {
			a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{t}
		} else {
			a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 50, PodAffinityTerm: t}}
		}
	}
	return p
}

func orNew(a *corev1.NodeAffinity) *corev1.NodeAffinity {
	if a == nil {
		return &corev1.NodeAffinity{}
	}
	return a
}

// selector selects pods by app (often the pod's own), maybe by tier too.
func (d *fuzzInput) selector(p *corev1.Pod) *metav1.LabelSelector {
	app := p.Labels["app"]
	if d.chance(0.3) {
		app = d.pick("a", "b", "c")
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	if d.chance(0.2) {
		sel.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{d.pick("x", "y")}}}
	}
	return sel
}

func (d *fuzzInput) term() corev1.PodAffinityTerm {
	t := term(d.pick(corev1.LabelTopologyZone, corev1.LabelHostname), "app", d.pick("a", "b", "c"))
	if d.chance(0.1) {
		t.NamespaceSelector = &metav1.LabelSelector{} // every namespace
		if d.chance(0.5) {
			t.NamespaceSelector.MatchLabels = map[string]string{"env": "prod"} // only "default"
		}
	}
	return t
}

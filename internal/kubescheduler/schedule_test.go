package kubescheduler

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

func node(name, zone, cpu, mem string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zone}},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("110")}},
	}
}

func pod(name, cpu, mem string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func on(n string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

func labelled(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels = map[string]string{k: v} }
}

func tolerate(key string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	}
}

func withAffinity(a *corev1.Affinity) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Affinity = a }
}

func spread(key string, skew int32, when corev1.UnsatisfiableConstraintAction, minDomains *int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			TopologyKey: key, MaxSkew: skew, WhenUnsatisfiable: when, MinDomains: minDomains,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}})
	}
}

func podTerm(key string, app string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
}

var (
	noSchedule = corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	preferNot  = corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}
)

// TestScheduleFollowsDefaultProfile checks decisions against
// kube-scheduler's documented behaviour, one plugin at a time.
func TestScheduleFollowsDefaultProfile(t *testing.T) {
	ptr := func(v int32) *int32 { return &v }
	cases := []struct {
		name  string
		nodes []*corev1.Node
		bound []*corev1.Pod
		pod   *corev1.Pod
		opts  Options
		want  string // node, or "" with the message in msg
		msg   string
	}{
		{name: "LeastAllocated prefers the emptier node",
			nodes: []*corev1.Node{node("a", "z1", "4", "16Gi"), node("b", "z1", "4", "16Gi")},
			bound: []*corev1.Pod{pod("x", "2", "8Gi", on("a"))},
			pod:   pod("p", "1", "1Gi"), want: "b"},
		{name: "LeastAllocated counts default requests for pods that set none",
			nodes: []*corev1.Node{node("a", "z1", "1", "4Gi"), node("b", "z1", "1", "4Gi")},
			bound: []*corev1.Pod{pod("x", "0", "0", on("a")), pod("y", "0", "0", on("a"))},
			pod:   pod("p", "0", "0"), want: "b"},
		{name: "Insufficient cpu everywhere",
			nodes: []*corev1.Node{node("a", "z1", "2", "16Gi"), node("b", "z1", "4", "16Gi", noSchedule)},
			bound: []*corev1.Pod{pod("x", "1500m", "1Gi", on("a"))},
			pod:   pod("p", "1", "1Gi"),
			msg:   "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}."},
		{name: "every resource short is named",
			nodes: []*corev1.Node{node("a", "z1", "2", "2Gi")},
			pod:   pod("p", "3", "3Gi"),
			msg:   "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."},
		{name: "a tolerated NoSchedule taint admits the pod",
			nodes: []*corev1.Node{node("a", "z1", "2", "16Gi", noSchedule)},
			pod:   pod("p", "1", "1Gi", tolerate("dedicated")), want: "a"},
		{name: "PreferNoSchedule outweighs allocation",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi", preferNot), node("b", "z1", "8", "32Gi")},
			bound: []*corev1.Pod{pod("x", "6", "24Gi", on("b"))},
			pod:   pod("p", "1", "1Gi"), want: "b"},
		{name: "unschedulable node",
			nodes: []*corev1.Node{func() *corev1.Node { n := node("a", "z1", "8", "32Gi"); n.Spec.Unschedulable = true; return n }()},
			pod:   pod("p", "1", "1Gi"), msg: "0/1 nodes are available: 1 node(s) were unschedulable."},
		{name: "nodeSelector",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z2", "8", "32Gi")},
			bound: []*corev1.Pod{pod("x", "4", "16Gi", on("b"))},
			pod: pod("p", "1", "1Gi", func(p *corev1.Pod) {
				p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "z2"}
			}), want: "b"},
		{name: "preferred node affinity outweighs allocation",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z2", "8", "32Gi")},
			bound: []*corev1.Pod{pod("x", "4", "16Gi", on("b"))},
			pod: pod("p", "1", "1Gi", withAffinity(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 10,
					Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z2"}}}}}}}})),
			want: "b"},
		{name: "host port taken",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z1", "8", "32Gi")},
			bound: []*corev1.Pod{pod("x", "4", "16Gi", on("b")), pod("y", "0", "0", on("a"), func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 8080, ContainerPort: 80}}
			})},
			pod: pod("p", "1", "1Gi", func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 8080, HostIP: "10.0.0.1", ContainerPort: 80}}
			}), want: "b"},
		{name: "init containers and overhead count",
			nodes: []*corev1.Node{node("a", "z1", "2", "32Gi")},
			pod: pod("p", "1", "1Gi", func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}}}
				p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m")}
			}), msg: "0/1 nodes are available: 1 Insufficient cpu."},
		{name: "extended resource the node lacks",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi")},
			pod: pod("p", "1", "1Gi", func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
			}), msg: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."},
		{name: "too many pods",
			nodes: []*corev1.Node{func() *corev1.Node {
				n := node("a", "z1", "8", "32Gi")
				n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("1")
				return n
			}()},
			bound: []*corev1.Pod{pod("x", "0", "0", on("a"))},
			pod:   pod("p", "1", "1Gi"), msg: "0/1 nodes are available: 1 Too many pods."},
		{name: "DoNotSchedule spread sends the pod to the emptier zone despite load",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z2", "8", "32Gi")},
			bound: []*corev1.Pod{pod("x", "100m", "1Gi", on("a")), pod("y", "6", "24Gi", on("b"), labelled("app", "other"))},
			pod:   pod("p", "1", "1Gi", spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, nil)), want: "b"},
		{name: "minDomains above the domains counts the smallest as zero",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z2", "8", "32Gi")},
			bound: []*corev1.Pod{pod("x", "1", "1Gi", on("a")), pod("y", "1", "1Gi", on("b"))},
			pod:   pod("p", "1", "1Gi", spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, ptr(3))),
			msg:   "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints."},
		{name: "spread key missing on a node",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z1", "8", "32Gi")},
			pod:   pod("p", "1", "1Gi", spread("rack", 1, corev1.DoNotSchedule, nil)),
			msg:   "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints (missing required label)."},
		{name: "required anti-affinity keeps replicas apart",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z1", "8", "32Gi")},
			bound: []*corev1.Pod{pod("x", "100m", "1Gi", on("a")), pod("y", "6", "24Gi", on("b"), labelled("app", "other"))},
			pod: pod("p", "1", "1Gi", withAffinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{podTerm(corev1.LabelHostname, "web")}}})),
			want: "b"},
		{name: "an existing pod's anti-affinity keeps the pod away",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z1", "8", "32Gi")},
			bound: []*corev1.Pod{pod("x", "100m", "1Gi", on("a"), labelled("app", "db"), withAffinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{podTerm(corev1.LabelHostname, "web")}}})),
				pod("y", "6", "24Gi", on("b"), labelled("app", "other"))},
			pod: pod("p", "1", "1Gi"), want: "b"},
		{name: "required affinity follows the matching pod's zone",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z2", "8", "32Gi"), node("c", "z2", "8", "32Gi")},
			bound: []*corev1.Pod{pod("x", "6", "24Gi", on("b"), labelled("app", "cache"))},
			pod: pod("p", "1", "1Gi", withAffinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{podTerm(corev1.LabelTopologyZone, "cache")}}})),
			want: "c"},
		{name: "the first pod of a self-affine group may go anywhere",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi")},
			pod: pod("p", "1", "1Gi", withAffinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{podTerm(corev1.LabelTopologyZone, "web")}}})),
			want: "a"},
		{name: "required affinity with no match and no self match",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi")},
			pod: pod("p", "1", "1Gi", withAffinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{podTerm(corev1.LabelTopologyZone, "cache")}}})),
			msg: "0/1 nodes are available: 1 node(s) didn't match pod affinity rules."},
		{name: "preferred pod affinity outweighs allocation",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z2", "8", "32Gi")},
			bound: []*corev1.Pod{pod("x", "5", "20Gi", on("b"), labelled("app", "cache"))},
			pod: pod("p", "1", "1Gi", withAffinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 50,
					PodAffinityTerm: podTerm(corev1.LabelTopologyZone, "cache")}}}})),
			want: "b"},
		{name: "an existing pod's preferred anti-affinity repels",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z1", "8", "32Gi")},
			bound: []*corev1.Pod{pod("x", "100m", "1Gi", on("a"), labelled("app", "db"), withAffinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100,
					PodAffinityTerm: podTerm(corev1.LabelHostname, "web")}}}})),
				pod("y", "4", "16Gi", on("b"), labelled("app", "other"))},
			pod: pod("p", "1", "1Gi"), want: "b"},
		{name: "a tainted domain counts for spread unless nodeTaintsPolicy is Honor",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z2", "8", "32Gi"), node("c", "z3", "8", "32Gi", noSchedule)},
			bound: []*corev1.Pod{pod("x", "1", "1Gi", on("a")), pod("y", "1", "1Gi", on("b"))},
			pod:   pod("p", "1", "1Gi", spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, nil)),
			msg:   "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match pod topology spread constraints."},
		{name: "nodeTaintsPolicy Honor leaves the tainted domain out",
			nodes: []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z2", "8", "32Gi"), node("c", "z3", "8", "32Gi", noSchedule)},
			bound: []*corev1.Pod{pod("x", "1", "1Gi", on("a")), pod("y", "2", "1Gi", on("b"))},
			pod: pod("p", "1", "1Gi", spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, nil), func(p *corev1.Pod) {
				honor := corev1.NodeInclusionPolicyHonor
				p.Spec.TopologySpreadConstraints[0].NodeTaintsPolicy = &honor
			}), want: "a"},
		{name: "default spread constraints spread an owner's pods over hostnames",
			nodes: []*corev1.Node{node("a", "z1", "64", "256Gi"), node("b", "z1", "8", "32Gi")},
			bound: []*corev1.Pod{pod("x", "1", "1Gi", on("a")), pod("y", "1", "1Gi", on("a")), pod("z", "1", "1Gi", on("a"))},
			opts:  Options{DefaultSpreadSelector: func(*corev1.Pod) labels.Selector { return labels.SelectorFromSet(labels.Set{"app": "web"}) }},
			pod:   pod("p", "1", "1Gi"), want: "b"},
		{name: "without an owner the bigger node's free room wins",
			nodes: []*corev1.Node{node("a", "z1", "64", "256Gi"), node("b", "z1", "8", "32Gi")},
			bound: []*corev1.Pod{pod("x", "1", "1Gi", on("a")), pod("y", "1", "1Gi", on("a")), pod("z", "1", "1Gi", on("a"))},
			pod:   pod("p", "1", "1Gi"), want: "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSnapshot(tc.nodes, tc.bound, tc.opts)
			d := s.Schedule(tc.pod)
			if d.Node != tc.want {
				t.Fatalf("node %q, want %q (%s)", d.Node, tc.want, d.Message())
			}
			if tc.want == "" && d.Message() != tc.msg {
				t.Errorf("message %q, want %q", d.Message(), tc.msg)
			}
		})
	}
}

// TestScoresMatchPublishedFormulas checks the resource scores against
// kube-scheduler's formulas worked by hand.
func TestScoresMatchPublishedFormulas(t *testing.T) {
	n := &nodeInfo{alloc: resources{cpu: 4000, mem: 8 << 30}, req: resources{cpu: 1000, mem: 1 << 30},
		nonZero: cpuMem{cpu: 1000, mem: 1 << 30}}
	cases := []struct {
		name            string
		pod             *corev1.Pod
		least, balanced int64
	}{
		// cpu (4000-2000)*100/4000 = 50, memory (8-2)*100/8 = 75; mean 62.
		// Fractions 0.5 and 0.25: std 0.125, 87.
		{name: "requests", pod: pod("p", "1", "1Gi"), least: 62, balanced: 87},
		// Defaults 100m and 200Mi for LeastAllocated; BalancedAllocation
		// skips a pod that requests nothing.
		{name: "best effort", pod: pod("p", "0", "0", func(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} }),
			least: (72 + 85) / 2, balanced: 0},
		// More than the node has left: no free share.
		{name: "overcommitted", pod: pod("p", "4", "1Gi"), least: (0 + 75) / 2, balanced: 62}, // std (1-0.25)/2 = 0.375,
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pi := newPodInfo(tc.pod)
			if got := leastAllocated(n, pi); got != tc.least {
				t.Errorf("LeastAllocated %d, want %d", got, tc.least)
			}
			if got := balancedAllocation(n, pi); got != tc.balanced {
				t.Errorf("BalancedAllocation %d, want %d", got, tc.balanced)
			}
		})
	}
}

// TestSpreadScoreNormalizes checks PodTopologySpread's scoring on
// hostnames: raw score count*log(nodes+2) + maxSkew-1, normalized so the
// node with fewest matching pods scores 100.
func TestSpreadScoreNormalizes(t *testing.T) {
	nodes := []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z1", "8", "32Gi"), node("c", "z1", "8", "32Gi")}
	bound := []*corev1.Pod{pod("x", "1", "1Gi", on("a")), pod("y", "1", "1Gi", on("a")), pod("z", "1", "1Gi", on("b"))}
	s := NewSnapshot(nodes, bound, Options{})
	c := newCycle(s, pod("p", "1", "1Gi", spread(corev1.LabelHostname, 1, corev1.ScheduleAnyway, nil)))
	got := c.spreadScores([]int{0, 1, 2})
	// log(5) = 1.609: raw a = round(3.22) = 3, b = 2, c = 0; max 3, min 0:
	// 100*(3+0-raw)/3.
	want := []int64{0, 33, 100}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("scores %v, want %v", got, want)
	}
}

// TestAssumeIsSeenByTheNextDecision binds pods one after another: each
// decision sees the ones before, so identical pods spread over identical
// nodes, and ties do not all go to the first node by name.
func TestAssumeIsSeenByTheNextDecision(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 4 {
		nodes = append(nodes, node(fmt.Sprintf("n%d", i), "z1", "4", "16Gi"))
	}
	s := NewSnapshot(nodes, nil, Options{Cache: NewCache()})
	per := map[string]int{}
	for i := range 8 {
		p := pod(fmt.Sprintf("p%d", i), "1", "4Gi")
		d := s.Schedule(p)
		if d.Node == "" {
			t.Fatalf("pod %d: %s", i, d.Message())
		}
		s.Assume(p, d.Node)
		per[d.Node]++
	}
	for _, n := range nodes {
		if per[n.Name] != 2 {
			t.Errorf("per node %v, want 2 each", per)
			break
		}
	}
}

func TestLessIsPriorityThenAge(t *testing.T) {
	at := func(p *corev1.Pod, sec int, prio int32) *corev1.Pod {
		p.CreationTimestamp = metav1.NewTime(time.Unix(int64(sec), 0))
		p.Spec.Priority = &prio
		return p
	}
	cases := []struct {
		name string
		a, b *corev1.Pod
		want bool
	}{
		{"higher priority first", at(pod("a", "1", "1Gi"), 10, 100), at(pod("b", "1", "1Gi"), 0, 0), true},
		{"older first", at(pod("a", "1", "1Gi"), 0, 0), at(pod("b", "1", "1Gi"), 10, 0), true},
		{"then name", at(pod("b", "1", "1Gi"), 0, 0), at(pod("a", "1", "1Gi"), 0, 0), false},
	}
	for _, tc := range cases {
		if got := Less(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Less %v, want %v", tc.name, got, tc.want)
		}
	}
}

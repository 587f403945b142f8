package plancheck_test

import (
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/plancheck"
	"github.com/nodewright/nodewright/internal/solver"
	"github.com/nodewright/nodewright/internal/workload"
)

// TestSolverDiverse checks the solver's plans for Karpenter's benchmark mix:
// every pod placed, and kube-scheduler would bind every placement.
func TestSolverDiverse(t *testing.T) {
	const seed = 42
	for _, n := range []int{1000, 5000} {
		t.Run(fmt.Sprintf("pods=%d", n), func(t *testing.T) {
			t.Logf("workload.DiversePods(%d, seed %d), 400 benchmark instance types", n, seed)
			in := &solver.Input{
				NodePools: []solver.NodePool{{Name: "default", InstanceTypes: workload.BenchmarkInstanceTypes(400)}},
				Pods:      workload.DiversePods(n, seed),
			}
			start := time.Now()
			plan, err := solver.Solve(in)
			if err != nil {
				t.Fatalf("Solve: %v", err)
			}
			solved := time.Now()
			vs := plancheck.Check(in, plan)
			t.Logf("solve %v, check %v: %d placements, %d new claims, %d unschedulable, $%.2f/h",
				solved.Sub(start), time.Since(solved), len(plan.Placements), len(plan.NewClaims), len(plan.Unschedulable), plan.Cost())
			for i, u := range plan.Unschedulable {
				if i == 10 {
					t.Errorf("... and %d more unschedulable", len(plan.Unschedulable)-10)
					break
				}
				t.Errorf("unschedulable: %s/%s: %v", u.Pod.Namespace, u.Pod.Name, u.Reason)
			}
			reportViolations(t, vs)
		})
	}
}

// reportViolations fails the test with the first violations and a count per
// constraint.
func reportViolations(t *testing.T, vs []plancheck.Violation) {
	t.Helper()
	if len(vs) == 0 {
		return
	}
	byConstraint := map[string]int{}
	for _, v := range vs {
		byConstraint[v.Constraint]++
	}
	t.Errorf("%d violations %v", len(vs), byConstraint)
	for i, v := range vs {
		if i == 10 {
			t.Errorf("... and %d more", len(vs)-10)
			break
		}
		t.Errorf("%s", v)
	}
}

// TestSolverRegressions replays, by hand, the smallest inputs the fuzzer has
// reduced solver bugs to, so that each reads as a story: the solver must not
// panic or fail on them, and kube-scheduler must accept its plan.
func TestSolverRegressions(t *testing.T) {
	// Offered in zones 1 (spot) and 2 (on-demand) only.
	twoZoneType := func(name, arch string) *instancetype.InstanceType {
		offerings := instancetype.Offerings{
			{Zone: "test-zone-1", CapacityType: "spot", Price: 0.26, Available: true},
			{Zone: "test-zone-2", CapacityType: "on-demand", Price: 0.4, Available: true},
		}
		return &instancetype.InstanceType{
			Name: name, Requirements: workload.Requirements(name, arch, offerings), Offerings: offerings,
			Capacity: resources("8", "16Gi", 58),
		}
	}
	labeledDaemonSet := func(app string, nodeSelector map[string]string) *appsv1.DaemonSet {
		ds := daemonSet("ds", "300m")
		ds.Spec.Template.Labels = map[string]string{"app": app}
		ds.Spec.Template.Spec.NodeSelector = nodeSelector
		return ds
	}
	allNamespaces := func(tm corev1.PodAffinityTerm) corev1.PodAffinityTerm {
		tm.NamespaceSelector = &metav1.LabelSelector{}
		return tm
	}
	preferZone3 := func(p *corev1.Pod) {
		affinity(p).NodeAffinity = &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight:     75,
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: zoneKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-3"}}}},
		}}}
	}
	cases := []struct {
		name string
		in   func() *solver.Input
	}{{
		name: "usage already above a nodes limit launches nothing",
		in: func() *solver.Input {
			return &solver.Input{
				NodePools: []solver.NodePool{{Name: "p", InstanceTypes: workload.BenchmarkInstanceTypes(4),
					Limits: corev1.ResourceList{"nodes": resource.MustParse("0")}, Usage: corev1.ResourceList{"nodes": resource.MustParse("1")}}},
				Pods: []*corev1.Pod{pod("a", "1")},
			}
		},
	}, {
		name: "preferred node affinity does not narrow a spread's domains",
		in: func() *solver.Input {
			n := existing("n1", "test-zone-1")
			n.Allocatable = resources("100m", "1Gi", 10)
			return &solver.Input{
				NodePools: []solver.NodePool{{Name: "p", InstanceTypes: workload.BenchmarkInstanceTypes(20)}},
				Nodes:     []solver.Node{n},
				Pods:      pods(2, "s", "1", withLabels("app", "c"), preferZone3, withSpread(zoneKey, 1, nil, "app", "c")),
			}
		},
	}, {
		name: "a spread for arm64 pods does not count amd64 claims",
		in: func() *solver.Input {
			n := existing("n3", "test-zone-3")
			n.Labels[corev1.LabelArchStable] = "arm64"
			n.Allocatable = resources("13", "22Gi", 33)
			ps := pods(3, "h", "1476m", withLabels("app", "b"), withHostPort(8080, ""), withSpread(hostKey, 2, nil, "app", "b"))
			ps = append(ps,
				pod("z0", "1365m", withLabels("app", "b"), withSpread(zoneKey, 2, ptr(int32(3)), "app", "b")),
				pod("z1", "1365m", withLabels("app", "b"), withNodeSelector(corev1.LabelArchStable, "arm64"), withSpread(zoneKey, 2, ptr(int32(3)), "app", "b")))
			return &solver.Input{
				NodePools: []solver.NodePool{{Name: "p", InstanceTypes: workload.BenchmarkInstanceTypes(26)[25:]}},
				Nodes:     []solver.Node{n},
				Pods:      ps,
			}
		},
	}, {
		name: "a DaemonSet pod repels hostname anti-affinity",
		in: func() *solver.Input {
			return &solver.Input{
				NodePools:  []solver.NodePool{{Name: "p", InstanceTypes: workload.BenchmarkInstanceTypes(20)}},
				DaemonSets: []*appsv1.DaemonSet{labeledDaemonSet("a", nil)},
				Pods:       []*corev1.Pod{pod("a", "100m", withLabels("app", "b"), withPodAntiAffinity(allNamespaces(term(hostKey, "app", "a"))))},
			}
		},
	}, {
		// The claim's zone is still open when its first pod arrives.
		name: "a DaemonSet pod repels zone anti-affinity of a new claim's first pod",
		in: func() *solver.Input {
			return &solver.Input{
				NodePools:  []solver.NodePool{{Name: "p", InstanceTypes: workload.BenchmarkInstanceTypes(4)}},
				DaemonSets: []*appsv1.DaemonSet{labeledDaemonSet("b", nil)},
				Pods:       []*corev1.Pod{pod("a", "100m", withLabels("app", "a"), withPodAntiAffinity(allNamespaces(term(zoneKey, "app", "b"))))},
			}
		},
	}, {
		// The DaemonSet selects amd64; the pool launches arm64 only.
		name: "a DaemonSet pod that will not run does not satisfy pod affinity",
		in: func() *solver.Input {
			return &solver.Input{
				NodePools:  []solver.NodePool{{Name: "p", InstanceTypes: []*instancetype.InstanceType{twoZoneType("arm8", "arm64")}}},
				DaemonSets: []*appsv1.DaemonSet{labeledDaemonSet("b", map[string]string{corev1.LabelArchStable: "amd64"})},
				Pods: []*corev1.Pod{
					pod("b0", "1", withLabels("app", "b")),
					pod("a", "1", withLabels("app", "a"), withPodAffinity(allNamespaces(term(hostKey, "app", "b")))),
				},
			}
		},
	}, {
		// Together the two pods leave only zone 3, which no type offers.
		name: "zone requirements that meet only outside every offering",
		in: func() *solver.Input {
			return &solver.Input{
				NodePools: []solver.NodePool{{Name: "p", InstanceTypes: []*instancetype.InstanceType{twoZoneType("t0", "amd64")}}},
				Pods: []*corev1.Pod{
					pod("a", "1", withRequiredNodeAffinity(zoneKey, corev1.NodeSelectorOpIn, "test-zone-1", "test-zone-3")),
					pod("b", "1", withRequiredNodeAffinity(zoneKey, corev1.NodeSelectorOpIn, "test-zone-2", "test-zone-3")),
				},
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in()
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panicked: %v\n%s", r, debug.Stack())
				}
			}()
			plan, err := solver.Solve(in)
			if err != nil {
				t.Fatalf("Solve: %v", err)
			}
			reportViolations(t, plancheck.Check(in, plan))
		})
	}
}

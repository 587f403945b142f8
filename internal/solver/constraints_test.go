package solver_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
)

type constraintCase struct {
	name  string
	in    solver.Input
	check func(t *testing.T, plan *solver.Plan)
}

func distinct(m map[string]string, names ...string) bool {
	seen := map[string]bool{}
	for _, n := range names {
		if m[n] == "" || seen[m[n]] {
			return false
		}
		seen[m[n]] = true
	}
	return true
}

func allPlaced(t *testing.T, plan *solver.Plan) {
	t.Helper()
	for _, u := range plan.Unschedulable {
		t.Errorf("pod %s unschedulable: %s", u.Pod.Name, u.Reason)
	}
}

func unschedulableWith(name, text string) func(*testing.T, *solver.Plan) {
	return func(t *testing.T, plan *solver.Plan) {
		t.Helper()
		for _, u := range plan.Unschedulable {
			if u.Pod.Name == name {
				if !strings.Contains(u.Reason.String(), text) {
					t.Errorf("reason for %s does not mention %q:\n%s", name, text, u.Reason)
				}
				return
			}
		}
		t.Errorf("pod %s was placed: %v", name, placement(plan))
	}
}

func nodeWith(name, zone string, alloc corev1.ResourceList, pods ...*corev1.Pod) solver.Node {
	return solver.Node{
		Name: name, NodePool: "default",
		Labels:      map[string]string{corev1.LabelTopologyZone: zone, corev1.LabelHostname: name, corev1.LabelArchStable: "amd64"},
		Allocatable: alloc, Pods: pods,
	}
}

func alloc(cpu, mem, pods string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse(pods)}
}

func TestConstraints(t *testing.T) {
	zoneA, zoneB := "test-zone-1", "test-zone-2"
	cases := []constraintCase{
		{name: "resources: too big for every type", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: []*corev1.Pod{mkPod("huge", "64", "1Gi")}},
			check: unschedulableWith("huge", "cpu: 16 - 100m kube-reserved = 15900m < 64")},
		{name: "resources: init container larger than the app", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: []*corev1.Pod{mkPod("p", "100m", "100Mi", withInit("3", "100Mi"))}},
			check: func(t *testing.T, plan *solver.Plan) {
				allPlaced(t, plan)
				if c := claimOf(plan, "p"); c == nil || c.InstanceTypes[0].Name != "fake-it-3" {
					t.Errorf("want a 4-vCPU type for a 3-CPU init container, got %v", c.InstanceTypes[0].Name)
				}
			}},
		{name: "resources: existing node with room is used", in: solver.Input{NodePools: []solver.NodePool{defaultPool()},
			Nodes: []solver.Node{nodeWith("n1", zoneA, alloc("4", "8Gi", "10"), mkPod("old", "3", "1Gi"))},
			Pods:  []*corev1.Pod{mkPod("fits", "500m", "1Gi"), mkPod("nofit", "2", "1Gi")}},
			check: func(t *testing.T, plan *solver.Plan) {
				m := placement(plan)
				if m["fits"] != "n1" || m["nofit"] == "n1" || m["nofit"] == "" {
					t.Errorf("placements %v", m)
				}
			}},
		{name: "resources: extended resource only on some types", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: []*corev1.Pod{mkPod("gpu", "1", "1Gi", withRequest("example.com/gpu", "1"))}},
			check: unschedulableWith("gpu", "example.com/gpu")},
		{name: "nodeSelector narrows the zone", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: []*corev1.Pod{mkPod("p", "1", "1Gi", withNodeSelector(corev1.LabelTopologyZone, zoneB))}},
			check: func(t *testing.T, plan *solver.Plan) {
				if z := zoneOf(plan, "p"); z != zoneB {
					t.Errorf("zone %q, want %s", z, zoneB)
				}
			}},
		{name: "node affinity NotIn spot", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: []*corev1.Pod{mkPod("p", "1", "1Gi", withNodeAffinity(req("karpenter.sh/capacity-type", corev1.NodeSelectorOpNotIn, "spot")))}},
			check: func(t *testing.T, plan *solver.Plan) {
				c := claimOf(plan, "p")
				if c == nil || c.Requirements.Get("karpenter.sh/capacity-type").Has("spot") {
					t.Errorf("claim still allows spot: %v", c.Requirements)
				}
			}},
		{name: "node affinity on a label no node has", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: []*corev1.Pod{mkPod("p", "1", "1Gi", withNodeAffinity(req("example.com/team", corev1.NodeSelectorOpIn, "red")))}},
			check: unschedulableWith("p", "example.com/team")},
		{name: "node affinity satisfied by a NodePool label", in: solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) { np.Labels = map[string]string{"example.com/team": "red"} })},
			Pods: []*corev1.Pod{mkPod("p", "1", "1Gi", withNodeAffinity(req("example.com/team", corev1.NodeSelectorOpIn, "red")))}},
			check: allPlaced},
		{name: "node affinity Gt on a custom integer label", in: solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) { np.Labels = map[string]string{"example.com/gen": "5"} })},
			Pods: []*corev1.Pod{mkPod("ok", "1", "1Gi", withNodeAffinity(req("example.com/gen", corev1.NodeSelectorOpGt, "4"))), mkPod("no", "1", "1Gi", withNodeAffinity(req("example.com/gen", corev1.NodeSelectorOpLt, "5")))}},
			check: func(t *testing.T, plan *solver.Plan) {
				m := placement(plan)
				if m["ok"] == "" || m["no"] != "" {
					t.Errorf("placements %v", m)
				}
			}},
		{name: "taint not tolerated", in: solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) {
			np.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		})}, Pods: []*corev1.Pod{mkPod("p", "1", "1Gi")}},
			check: unschedulableWith("p", "taint dedicated=gpu:NoSchedule not tolerated")},
		{name: "taint tolerated", in: solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) {
			np.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute}}
		})}, Pods: []*corev1.Pod{mkPod("p", "1", "1Gi", withToleration("dedicated", corev1.TaintEffectNoExecute))}},
			check: allPlaced},
		{name: "PreferNoSchedule is a preference: relaxed when nothing else fits", in: solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) {
			np.Taints = []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
		})}, Pods: []*corev1.Pod{mkPod("p", "1", "1Gi")}},
			check: allPlaced},
		{name: "startup taints do not block", in: solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) {
			np.StartupTaints = []corev1.Taint{{Key: "node.cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}}
		})}, Pods: []*corev1.Pod{mkPod("p", "1", "1Gi")}},
			check: allPlaced},
		{name: "in-flight node: startup and ephemeral taints ignored", in: solver.Input{NodePools: []solver.NodePool{defaultPool()},
			Nodes: []solver.Node{func() solver.Node {
				n := nodeWith("starting", zoneA, alloc("4", "8Gi", "10"))
				n.InFlight = true
				n.StartupTaints = []corev1.Taint{{Key: "node.cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}}
				n.Taints = append(n.StartupTaints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}, corev1.Taint{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute})
				return n
			}()},
			Pods: []*corev1.Pod{mkPod("p", "1", "1Gi")}},
			check: func(t *testing.T, plan *solver.Plan) {
				if m := placement(plan); m["p"] != "starting" || len(plan.NewClaims) != 0 {
					t.Errorf("want the pod on the in-flight node and no new claim: %v, %d claims", m, len(plan.NewClaims))
				}
			}},
		{name: "deleting node takes nothing", in: solver.Input{NodePools: []solver.NodePool{defaultPool()},
			Nodes: []solver.Node{func() solver.Node {
				n := nodeWith("going", zoneA, alloc("4", "8Gi", "10"))
				n.Deleting = true
				return n
			}()},
			Pods: []*corev1.Pod{mkPod("p", "1", "1Gi")}},
			check: func(t *testing.T, plan *solver.Plan) {
				if m := placement(plan); m["p"] == "going" || m["p"] == "" {
					t.Errorf("placements %v", m)
				}
			}},
		{name: "host ports keep pods apart", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: pods(3, "web", "100m", "100Mi", withHostPort(8080))},
			check: func(t *testing.T, plan *solver.Plan) {
				if !distinct(placement(plan), "web-0", "web-1", "web-2") {
					t.Errorf("pods share a host port: %v", placement(plan))
				}
			}},
		{name: "anti-affinity on hostname", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: pods(4, "a", "100m", "100Mi", withLabels("app", "a"), withAntiAffinity(corev1.LabelHostname, map[string]string{"app": "a"}))},
			check: func(t *testing.T, plan *solver.Plan) {
				if !distinct(placement(plan), "a-0", "a-1", "a-2", "a-3") {
					t.Errorf("placements %v", placement(plan))
				}
			}},
		{name: "anti-affinity of an existing pod repels (symmetry)", in: solver.Input{NodePools: []solver.NodePool{defaultPool()},
			Nodes: []solver.Node{nodeWith("n1", zoneA, alloc("8", "16Gi", "20"), mkPod("loner", "100m", "100Mi", withAntiAffinity(corev1.LabelHostname, map[string]string{"app": "x"})))},
			Pods:  []*corev1.Pod{mkPod("x", "100m", "100Mi", withLabels("app", "x"))}},
			check: func(t *testing.T, plan *solver.Plan) {
				if m := placement(plan); m["x"] == "n1" || m["x"] == "" {
					t.Errorf("placements %v", m)
				}
			}},
		{name: "anti-affinity on zone: at most one per zone", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: pods(4, "z", "100m", "100Mi", withLabels("app", "z"), withAntiAffinity(corev1.LabelTopologyZone, map[string]string{"app": "z"}))},
			check: func(t *testing.T, plan *solver.Plan) {
				zones := map[string]int{}
				for i := 0; i < 4; i++ {
					zones[zoneOf(plan, "z-"+string(rune('0'+i)))]++
				}
				if len(plan.Unschedulable) != 1 || len(zones) != 4 { // three zones and one unschedulable ("")
					t.Errorf("zones %v, unschedulable %d", zones, len(plan.Unschedulable))
				}
			}},
		{name: "pod affinity on zone follows the first", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: pods(5, "f", "2", "1Gi", withLabels("app", "f"), withPodAffinity(corev1.LabelTopologyZone, map[string]string{"app": "f"}))},
			check: func(t *testing.T, plan *solver.Plan) {
				allPlaced(t, plan)
				z := zoneOf(plan, "f-0")
				for i := 1; i < 5; i++ {
					if zi := zoneOf(plan, "f-"+string(rune('0'+i))); zi != z {
						t.Errorf("f-%d in %s, f-0 in %s", i, zi, z)
					}
				}
			}},
		{name: "pod affinity to a pod that is nowhere", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: []*corev1.Pod{mkPod("p", "1", "1Gi", withPodAffinity(corev1.LabelHostname, map[string]string{"app": "db"}))}},
			check: unschedulableWith("p", "NodePool default")},
		{name: "pod affinity to an existing pod's node", in: solver.Input{NodePools: []solver.NodePool{defaultPool()},
			Nodes: []solver.Node{nodeWith("db-node", zoneB, alloc("8", "16Gi", "20"), mkPod("db", "1", "1Gi", withLabels("app", "db")))},
			Pods:  []*corev1.Pod{mkPod("p", "1", "1Gi", withPodAffinity(corev1.LabelHostname, map[string]string{"app": "db"}))}},
			check: func(t *testing.T, plan *solver.Plan) {
				if m := placement(plan); m["p"] != "db-node" {
					t.Errorf("placements %v", m)
				}
			}},
		{name: "zone spread maxSkew 1", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: pods(9, "s", "1", "1Gi", withLabels("app", "s"), withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, map[string]string{"app": "s"}))},
			check: func(t *testing.T, plan *solver.Plan) {
				allPlaced(t, plan)
				zones := map[string]int{}
				for i := 0; i < 9; i++ {
					zones[zoneOf(plan, "s-"+string(rune('0'+i)))]++
				}
				for z, n := range zones {
					if n != 3 {
						t.Errorf("zone %s has %d pods, want 3 (%v)", z, n, zones)
					}
				}
			}},
		{name: "zone spread counts existing pods", in: solver.Input{NodePools: []solver.NodePool{defaultPool()},
			Nodes: []solver.Node{nodeWith("n1", zoneA, alloc("1", "1Gi", "2"), mkPod("old-1", "100m", "100Mi", withLabels("app", "s")), mkPod("old-2", "100m", "100Mi", withLabels("app", "s")))},
			Pods:  pods(2, "s", "1", "1Gi", withLabels("app", "s"), withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, map[string]string{"app": "s"}))},
			check: func(t *testing.T, plan *solver.Plan) {
				allPlaced(t, plan)
				for _, n := range []string{"s-0", "s-1"} {
					if zoneOf(plan, n) == zoneA {
						t.Errorf("%s went to %s, which already has 2", n, zoneA)
					}
				}
			}},
		{name: "hostname spread puts each pod on its own node", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: pods(3, "h", "100m", "100Mi", withLabels("app", "h"), withSpread(corev1.LabelHostname, 1, corev1.DoNotSchedule, map[string]string{"app": "h"}))},
			check: func(t *testing.T, plan *solver.Plan) {
				if !distinct(placement(plan), "h-0", "h-1", "h-2") {
					t.Errorf("placements %v", placement(plan))
				}
			}},
		{name: "spread with a zone the pool cannot use still counts (minDomains)", in: solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) {
			np.Requirements = scheduling.NewRequirements(scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneA))
		})}, Pods: pods(2, "m", "1", "1Gi", withLabels("app", "m"), func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "m"}}, MinDomains: ptr32(2)}}
		})},
			check: func(t *testing.T, plan *solver.Plan) {
				// One domain < minDomains 2: the minimum counts as 0, so only one pod fits.
				if len(plan.Unschedulable) != 1 {
					t.Errorf("want 1 unschedulable, got %d: %v", len(plan.Unschedulable), placement(plan))
				}
			}},
		{name: "ScheduleAnyway is relaxed when it cannot hold", in: solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) {
			np.Requirements = scheduling.NewRequirements(scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneA))
		})}, Nodes: []solver.Node{nodeWith("b1", zoneB, alloc("1", "1Gi", "1"), mkPod("x", "100m", "100Mi", withLabels("app", "w")))},
			Pods: pods(3, "w", "1", "1Gi", withLabels("app", "w"), withSpread(corev1.LabelTopologyZone, 1, corev1.ScheduleAnyway, map[string]string{"app": "w"}))},
			check: allPlaced},
		{name: "preferred anti-affinity relaxed when it cannot hold", in: solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) {
			np.Requirements = scheduling.NewRequirements(scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneA))
		})}, Pods: pods(3, "pa", "1", "1Gi", withLabels("app", "pa"), withPreferredAntiAffinity(corev1.LabelTopologyZone, map[string]string{"app": "pa"}))},
			check: allPlaced},
		{name: "preferred node affinity honoured when possible", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: []*corev1.Pod{mkPod("p", "1", "1Gi", withPreferredNodeAffinity(50, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneB)))}},
			check: func(t *testing.T, plan *solver.Plan) {
				if z := zoneOf(plan, "p"); z != zoneB {
					t.Errorf("zone %s, want the preferred %s", z, zoneB)
				}
			}},
		{name: "DaemonSet overhead counted on new nodes", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, DaemonSets: []*appsv1.DaemonSet{daemonSet("agent", "1", "1Gi")},
			Pods: []*corev1.Pod{mkPod("p", "1", "1Gi")}},
			check: func(t *testing.T, plan *solver.Plan) {
				c := claimOf(plan, "p")
				if c == nil || c.InstanceTypes[0].Name != "fake-it-2" {
					t.Fatalf("want a 3-vCPU type for 1 CPU + 1 CPU DaemonSet + 100m reserved, got %v", c.InstanceTypes[0].Name)
				}
				if cpu := c.DaemonSetRequests[corev1.ResourceCPU]; cpu.String() != "1" {
					t.Errorf("DaemonSet requests %v", c.DaemonSetRequests)
				}
			}},
		{name: "DaemonSet that does not tolerate the pool's taint is not counted", in: solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) {
			np.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
		})}, DaemonSets: []*appsv1.DaemonSet{daemonSet("agent", "1", "1Gi")},
			Pods: []*corev1.Pod{mkPod("p", "1", "1Gi", withToleration("dedicated", corev1.TaintEffectNoSchedule))}},
			check: func(t *testing.T, plan *solver.Plan) {
				if c := claimOf(plan, "p"); c == nil || len(c.DaemonSetRequests) != 0 {
					t.Errorf("DaemonSet counted on a node it cannot run on")
				}
			}},
		{name: "NodePool limits", in: solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) {
			np.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		})}, Pods: pods(3, "l", "1500m", "1Gi", withLabels("app", "l"), withAntiAffinity(corev1.LabelHostname, map[string]string{"app": "l"}))},
			check: func(t *testing.T, plan *solver.Plan) {
				// Each pod needs a 2-vCPU node; a 4-CPU limit holds two.
				if len(plan.NewClaims) != 2 || len(plan.Unschedulable) != 1 {
					t.Errorf("%d claims, %d unschedulable", len(plan.NewClaims), len(plan.Unschedulable))
				}
			}},
		{name: "NodePool node limit", in: solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) {
			np.Limits = corev1.ResourceList{"nodes": resource.MustParse("1")}
		})}, Pods: pods(2, "n", "100m", "100Mi", withLabels("app", "n"), withAntiAffinity(corev1.LabelHostname, map[string]string{"app": "n"}))},
			check: func(t *testing.T, plan *solver.Plan) {
				if len(plan.NewClaims) != 1 || len(plan.Unschedulable) != 1 {
					t.Errorf("%d claims, %d unschedulable", len(plan.NewClaims), len(plan.Unschedulable))
				}
			}},
		{name: "heavier NodePool first", in: solver.Input{NodePools: []solver.NodePool{
			defaultPool(),
			defaultPool(func(np *solver.NodePool) { np.Name, np.Weight = "preferred", 50 }),
		}, Pods: []*corev1.Pod{mkPod("p", "1", "1Gi")}},
			check: func(t *testing.T, plan *solver.Plan) {
				if c := claimOf(plan, "p"); c == nil || c.NodePool != "preferred" {
					t.Errorf("claim in %v", c)
				}
			}},
		{name: "minValues keeps the claim flexible", in: solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) {
			mv := 3
			np.Requirements = scheduling.NewRequirements(scheduling.NewRequirementWithMinValues(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, &mv, "fake-it-13", "fake-it-14", "fake-it-15"))
		})}, Pods: []*corev1.Pod{mkPod("a", "13", "1Gi"), mkPod("b", "1", "1Gi")}},
			check: func(t *testing.T, plan *solver.Plan) {
				allPlaced(t, plan)
				for _, c := range plan.NewClaims {
					if len(c.InstanceTypes) < 3 {
						t.Errorf("claim with %d types, minValues 3: pods %d", len(c.InstanceTypes), len(c.Pods))
					}
				}
			}},
		{name: "volume bound to a zone", in: solver.Input{NodePools: []solver.NodePool{defaultPool()},
			Volumes: solver.Volumes{
				PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}},
				PersistentVolumes: []*corev1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneB)}}}}}}}},
			},
			Pods: []*corev1.Pod{mkPod("db", "1", "1Gi", withPVC("data"))}},
			check: func(t *testing.T, plan *solver.Plan) {
				if z := zoneOf(plan, "db"); z != zoneB {
					t.Errorf("zone %s, want the volume's %s", z, zoneB)
				}
			}},
		{name: "WaitForFirstConsumer StorageClass with allowed topologies", in: solver.Input{NodePools: []solver.NodePool{defaultPool()},
			Volumes: solver.Volumes{
				PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: strp("zonal")}}},
				StorageClasses: []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "zonal"}, VolumeBindingMode: bindingMode(storagev1.VolumeBindingWaitForFirstConsumer),
					AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{"test-zone-3"}}}}}}},
			},
			Pods: []*corev1.Pod{mkPod("db", "1", "1Gi", withPVC("data"))}},
			check: func(t *testing.T, plan *solver.Plan) {
				if z := zoneOf(plan, "db"); z != "test-zone-3" {
					t.Errorf("zone %s, want test-zone-3", z)
				}
			}},
		{name: "missing PersistentVolumeClaim", in: solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: []*corev1.Pod{mkPod("db", "1", "1Gi", withPVC("gone"))}},
			check: unschedulableWith("db", "PersistentVolumeClaim default/gone not found")},
		{name: "no NodePool at all", in: solver.Input{Pods: []*corev1.Pod{mkPod("p", "1", "1Gi")}},
			check: unschedulableWith("p", "no NodePool")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := solver.Solve(&tc.in)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, plan)
			again, _ := solver.Solve(&tc.in)
			if a, b := placement(plan), placement(again); !equalMaps(a, b) {
				t.Errorf("not deterministic: %v vs %v", a, b)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func ptr32(i int32) *int32                                                   { return &i }
func strp(s string) *string                                                  { return &s }
func bindingMode(m storagev1.VolumeBindingMode) *storagev1.VolumeBindingMode { return &m }

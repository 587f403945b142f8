package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
)

func spreadWith(mod func(*corev1.TopologySpreadConstraint)) podOpt {
	return func(p *corev1.Pod) {
		c := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "s"}}}
		mod(&c)
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}

// zoneCounts counts where the named pods' claims launch.
func zoneCounts(plan *solver.Plan, names ...string) map[string]int {
	out := map[string]int{}
	for _, n := range names {
		out[zoneOf(plan, n)]++
	}
	return out
}

func TestSpreadPolicies(t *testing.T) {
	zoneA, zoneB := "test-zone-1", "test-zone-2"
	honor, ignore := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore
	// An existing node in zone A holds two matching pods but carries a label the
	// pods' node affinity excludes.
	other := nodeWith("other", zoneA, alloc("1", "1Gi", "2"), mkPod("o1", "100m", "100Mi", withLabels("app", "s")), mkPod("o2", "100m", "100Mi", withLabels("app", "s")))
	other.Labels["example.com/pool"] = "other"
	notOther := withNodeAffinity(req("example.com/pool", corev1.NodeSelectorOpDoesNotExist))
	names := []string{"s-0", "s-1", "s-2"}

	t.Run("nodeAffinityPolicy Honor ignores pods on nodes the pod cannot use", func(t *testing.T) {
		plan, _ := solver.Solve(&solver.Input{NodePools: []solver.NodePool{defaultPool()}, Nodes: []solver.Node{other},
			Pods: pods(3, "s", "1", "1Gi", withLabels("app", "s"), notOther, spreadWith(func(c *corev1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &honor }))})
		allPlaced(t, plan)
		if zc := zoneCounts(plan, names...); zc[zoneA] != 1 {
			t.Errorf("want one pod per zone, zone A's existing pods not counted: %v", zc)
		}
	})
	t.Run("nodeAffinityPolicy Ignore counts them", func(t *testing.T) {
		plan, _ := solver.Solve(&solver.Input{NodePools: []solver.NodePool{defaultPool()}, Nodes: []solver.Node{other},
			Pods: pods(3, "s", "1", "1Gi", withLabels("app", "s"), notOther, spreadWith(func(c *corev1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &ignore }))})
		allPlaced(t, plan)
		if zc := zoneCounts(plan, names...); zc[zoneA] != 0 {
			t.Errorf("zone A already has 2: want no new pod there: %v", zc)
		}
	})
	tainted := nodeWith("tainted", zoneA, alloc("1", "1Gi", "2"), mkPod("t1", "100m", "100Mi", withLabels("app", "s")), mkPod("t2", "100m", "100Mi", withLabels("app", "s")))
	tainted.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
	t.Run("nodeTaintsPolicy Honor ignores pods on nodes whose taints the pod does not tolerate", func(t *testing.T) {
		plan, _ := solver.Solve(&solver.Input{NodePools: []solver.NodePool{defaultPool()}, Nodes: []solver.Node{tainted},
			Pods: pods(3, "s", "1", "1Gi", withLabels("app", "s"), spreadWith(func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &honor }))})
		allPlaced(t, plan)
		if zc := zoneCounts(plan, names...); zc[zoneA] != 1 {
			t.Errorf("want one pod per zone: %v", zc)
		}
	})
	t.Run("nodeTaintsPolicy Ignore (default) counts them", func(t *testing.T) {
		plan, _ := solver.Solve(&solver.Input{NodePools: []solver.NodePool{defaultPool()}, Nodes: []solver.Node{tainted},
			Pods: pods(3, "s", "1", "1Gi", withLabels("app", "s"), spreadWith(func(c *corev1.TopologySpreadConstraint) {}))})
		allPlaced(t, plan)
		if zc := zoneCounts(plan, names...); zc[zoneA] != 0 {
			t.Errorf("zone A already has 2: %v", zc)
		}
	})
	t.Run("matchLabelKeys spreads each revision on its own", func(t *testing.T) {
		var ps []*corev1.Pod
		for _, rev := range []string{"r1", "r2"} {
			ps = append(ps, pods(3, "s-"+rev, "1", "1Gi", withLabels("app", "s", "rev", rev), spreadWith(func(c *corev1.TopologySpreadConstraint) {
				c.MatchLabelKeys = []string{"rev"}
			}))...)
		}
		plan, _ := solver.Solve(&solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: ps})
		allPlaced(t, plan)
		for _, rev := range []string{"r1", "r2"} {
			if zc := zoneCounts(plan, "s-"+rev+"-0", "s-"+rev+"-1", "s-"+rev+"-2"); len(zc) != 3 {
				t.Errorf("revision %s not spread over 3 zones: %v", rev, zc)
			}
		}
	})
	t.Run("spread over a custom key the pool defines", func(t *testing.T) {
		np := defaultPool(func(np *solver.NodePool) {
			np.Requirements = scheduling.NewRequirements(scheduling.NewRequirement("example.com/rack", corev1.NodeSelectorOpIn, "r1", "r2"))
		})
		ps := pods(4, "r", "1", "1Gi", withLabels("app", "s"), spreadWith(func(c *corev1.TopologySpreadConstraint) { c.TopologyKey = "example.com/rack" }))
		plan, _ := solver.Solve(&solver.Input{NodePools: []solver.NodePool{np}, Pods: ps})
		allPlaced(t, plan)
		racks := map[string]int{}
		for _, n := range []string{"r-0", "r-1", "r-2", "r-3"} {
			racks[claimOf(plan, n).Requirements.Labels()["example.com/rack"]]++
		}
		if racks["r1"] != 2 || racks["r2"] != 2 {
			t.Errorf("racks %v", racks)
		}
	})
	_ = zoneB
}

func TestAffinityNamespaces(t *testing.T) {
	db := mkPod("db", "1", "1Gi", withLabels("app", "db"))
	db.Namespace = "data"
	node := nodeWith("db-node", "test-zone-2", alloc("8", "16Gi", "20"), db)
	term := func(mod func(*corev1.PodAffinityTerm)) podOpt {
		return func(p *corev1.Pod) {
			tm := corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}
			mod(&tm)
			affinity(p).PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{tm}}
		}
	}
	namespaces := []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "data"}}}}
	cases := []struct {
		name string
		mod  func(*corev1.PodAffinityTerm)
		want string
	}{
		{"own namespace only: the db is elsewhere", func(*corev1.PodAffinityTerm) {}, ""},
		{"namespaces lists it", func(tm *corev1.PodAffinityTerm) { tm.Namespaces = []string{"data"} }, "db-node"},
		{"namespaceSelector matches it", func(tm *corev1.PodAffinityTerm) {
			tm.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "data"}}
		}, "db-node"},
		{"empty namespaceSelector means all", func(tm *corev1.PodAffinityTerm) { tm.NamespaceSelector = &metav1.LabelSelector{} }, "db-node"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := solver.Solve(&solver.Input{NodePools: []solver.NodePool{defaultPool()}, Nodes: []solver.Node{node}, Namespaces: namespaces,
				Pods: []*corev1.Pod{mkPod("app", "1", "1Gi", term(tc.mod))}})
			if err != nil {
				t.Fatal(err)
			}
			if got := placement(plan)["app"]; got != tc.want {
				t.Errorf("placed on %q, want %q", got, tc.want)
			}
		})
	}
}

package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/solver"
)

// TestPreferencePolicy: Respect holds preferences as requirements while
// they can hold (Karpenter's default); Ignore plans as if pods had none.
func TestPreferencePolicy(t *testing.T) {
	const zoneB = "test-zone-2"
	spread := func() []*corev1.Pod {
		return pods(3, "pa", "1", "1Gi", withLabels("app", "pa"), withPreferredAntiAffinity(corev1.LabelHostname, map[string]string{"app": "pa"}))
	}
	zoned := func() []*corev1.Pod {
		return []*corev1.Pod{mkPod("p", "1", "1Gi", withPreferredNodeAffinity(50, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneB)))}
	}
	for _, tc := range []struct {
		name   string
		ignore bool
		pods   []*corev1.Pod
		check  func(*testing.T, *solver.Plan)
	}{
		{name: "Respect: preferred hostname anti-affinity spreads the pods", pods: spread(), check: func(t *testing.T, p *solver.Plan) {
			if len(p.NewClaims) != 3 {
				t.Errorf("%d NodeClaims, want 3, one per pod", len(p.NewClaims))
			}
		}},
		{name: "Ignore: the same pods share one node", ignore: true, pods: spread(), check: func(t *testing.T, p *solver.Plan) {
			if len(p.NewClaims) != 1 {
				t.Errorf("%d NodeClaims, want 1", len(p.NewClaims))
			}
		}},
		{name: "Respect: preferred zone taken", pods: zoned(), check: func(t *testing.T, p *solver.Plan) {
			if z := p.NewClaims[0].Requirements.Get(corev1.LabelTopologyZone).Values(); len(z) != 1 || z[0] != zoneB {
				t.Errorf("zones %v, want only the preferred %s", z, zoneB)
			}
		}},
		{name: "Ignore: the zone is left open", ignore: true, pods: zoned(), check: func(t *testing.T, p *solver.Plan) {
			if z := p.NewClaims[0].Requirements.Get(corev1.LabelTopologyZone); z.Len() == 1 && z.Values()[0] == zoneB {
				t.Errorf("zone narrowed to the preferred %s under Ignore", zoneB)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := solver.Solve(&solver.Input{NodePools: []solver.NodePool{defaultPool()}, Pods: tc.pods, IgnorePreferences: tc.ignore})
			if err != nil {
				t.Fatal(err)
			}
			allPlaced(t, plan)
			tc.check(t, plan)
		})
	}
}

package explain

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/planner"
)

// TestNodeExplanations renders explain node on small clusters and compares
// the text with testdata/node-*.golden.
func TestNodeExplanations(t *testing.T) {
	budgets := func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{
			{Nodes: "10%"},
			{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}, Schedule: ptr("0 9 * * mon-fri"), Duration: &metav1.Duration{Duration: 8 * time.Hour}},
		}
	}
	cases := []struct {
		name  string
		build func(s *sources)
		node  string
		want  string
	}{
		{"node-protected", func(s *sources) {
			np := pool("general", budgets)
			s.Cluster.NodePools = append(s.Cluster.NodePools, np)
			s.node("node-a", np, "m5.xlarge", 20*time.Minute)
			s.pod("ci-1", "ci", "node-a", "100m", "100Mi", map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"})
			s.pod("ci-2", "ci", "node-a", "100m", "100Mi", map[string]string{karpv1.DoNotDisruptAnnotationKey: "2h"})
			s.pod("db-0", "db", "node-a", "100m", "100Mi", nil)
			s.pdb("db", "db")
		}, "node-a", "pod default/ci-2 has karpenter.sh/do-not-disrupt: \"2h\", which holds until 2026-11-23T13:30:00Z (lapses in 1h30m)"},
		{"node-waits-for-consolidate-after", func(s *sources) {
			np := pool("general", budgets)
			s.Cluster.NodePools = append(s.Cluster.NodePools, np)
			s.node("node-a", np, "m5.xlarge", 4*time.Minute)
		}, "node-a", "eligible at 2026-11-23T12:06:00Z (in 6m)"},
		{"claim-not-launched", func(s *sources) {
			np := pool("general")
			s.Cluster.NodePools = append(s.Cluster.NodePools, np)
			nc, _ := s.node("claim-a", np, "m5.xlarge", 0)
			s.Cluster.Nodes = nil
			nc.Status = karpv1.NodeClaimStatus{}
			for _, k := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey} {
				delete(nc.Labels, k)
			}
		}, "claim-a", "NodePool general; not launched yet"},
		{"node-empty-disrupted", func(s *sources) {
			np := pool("general", func(np *karpv1.NodePool) { np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1"}} })
			s.Cluster.NodePools = append(s.Cluster.NodePools, np)
			s.node("node-a", np, "m5.xlarge", 30*time.Minute)
			s.node("node-b", np, "m5.xlarge", 30*time.Minute)
		}, "node-b", "Decision: kept, because:\n  - Empty budget: budget 0 (nodes: 1)"},
		{"node-empty-disrupting", func(s *sources) {
			np := pool("general", func(np *karpv1.NodePool) { np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1"}} })
			s.Cluster.NodePools = append(s.Cluster.NodePools, np)
			s.node("node-a", np, "m5.xlarge", 30*time.Minute)
			s.node("node-b", np, "m5.xlarge", 30*time.Minute)
		}, "node-a", "Decision: disrupting (Empty, Delete): empty"},
		{"node-drifted-outside-window", func(s *sources) {
			np := pool("general", budgets, func(np *karpv1.NodePool) {
				np.Annotations[planner.DrainByAttritionAnnotation] = "true"
				// Only drift could take it: consolidation, which the
				// Drifted budget does not hold, is off for nodes with pods.
				np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
			})
			s.Cluster.NodePools = append(s.Cluster.NodePools, np)
			nc, _ := s.node("node-a", np, "m5.xlarge", 20*time.Minute)
			s.pod("web-0", "web", "node-a", "100m", "100Mi", nil)
			nc.Annotations["karpenter.sh/nodepool-hash"] = "stale"
		}, "node-a", "- Drifted budget: budget 1"},
		{"node-not-initialized", func(s *sources) {
			np := pool("general")
			s.Cluster.NodePools = append(s.Cluster.NodePools, np)
			nc, _ := s.node("node-a", np, "m5.xlarge", 0)
			nc.Status.Conditions = nil
		}, "node-a", "not initialized yet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &sources{}
			tc.build(s)
			ex, err := Node(s.input(t), tc.node)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := ex.WriteText(&b, now); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, b.String())
			}
			golden(t, tc.name+".golden", b.Bytes())
		})
	}
}

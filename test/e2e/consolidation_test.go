package e2e

import (
	"context"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/planner"
)

// underusedNodes builds n nodes of a pool, each with one small pod left on
// it: a big pod per node first (5 CPUs, so one fits per 8-CPU node), then
// n small pods that kube-scheduler spreads one per node (it prefers the
// least allocated node), then the big pods go.
func underusedNodes(t *testing.T, pool, ns string, n int32, small podShape) {
	t.Helper()
	sel := map[string]string{karpv1.NodePoolLabelKey: pool}
	deployment(t, ns, "big", n, sel, podShape{cpu: "5", memory: "1Gi"})
	waitRunning(t, ns, int(n), 4*time.Minute)
	deployment(t, ns, "small", n, sel, small)
	waitRunning(t, ns, int(2*n), 2*time.Minute)
	scale(t, ns, "big", 0)
}

// upTo8CPUs limits a NodePool to c5 machines of 2 to 8 CPUs, so that a
// 5-CPU pod takes a node of its own.
func upTo8CPUs(np *karpv1.NodePool) {
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large", "c5.xlarge", "c5.2xlarge"))
}

var multiNodeMessage = regexp.MustCompile(`^\d+ nodes: `)

// TestMultiNodeConsolidation: three under-used nodes go in one command,
// either deleted together or replaced together by one cheaper node.
func TestMultiNodeConsolidation(t *testing.T) {
	t.Parallel()
	const pool, ns = "multi", "e2e-multi"
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		consolidating(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized)(np)
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("15s")
		upTo8CPUs(np)
	})
	namespace(t, ns)
	rec := recordClaims(pool)
	underusedNodes(t, pool, ns, 3, podShape{cpu: "1", memory: "1Gi"})
	_, peak := poolPrice(t, pool)
	eventually(t, 4*time.Minute, "consolidation to fewer nodes", func() (bool, error) {
		_, n := poolPrice(t, pool)
		cs, _ := claimsOf(pool)
		running, other, _ := podCounts(ns)
		return n < peak && len(cs) == n && running == 3 && other == 0,
			errorf("%d nodes (peak %d), %d claims, %d pods running, %d not", n, peak, len(cs), running, other)
	})
	rec.Seen()
	states := rec.Last()
	states.checkReplacedAfterInit(t)
	// A Replace of several claims records the same replacements on each;
	// a Delete of several says how many in its DisruptionReason.
	together := map[string][]string{}
	for name, c := range states {
		if reps := c.Annotations[planner.ReplacementsAnnotation]; reps != "" && c.DeletionTimestamp != nil {
			together["replace "+reps] = append(together["replace "+reps], name)
		}
		if cond := meta.FindStatusCondition(c.Status.Conditions, karpv1.ConditionTypeDisruptionReason); cond != nil && multiNodeMessage.MatchString(cond.Message) {
			together["delete "+cond.Message] = append(together["delete "+cond.Message], name)
		}
	}
	multi := false
	for cmd, names := range together {
		t.Logf("%s: %v", cmd, names)
		multi = multi || len(names) > 1
	}
	if !multi {
		t.Errorf("no command took two or more nodes at once; claims: %s", describeClaims(pool))
	}
}

// TestSpotToSpotConsolidation: with --spot-to-spot-consolidation (the e2e
// controller runs with it), an under-used spot node is replaced by a
// cheaper spot node, launched and initialized first.
func TestSpotToSpotConsolidation(t *testing.T) {
	t.Parallel()
	const pool, ns = "spot", "e2e-spot"
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		consolidating(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized)(np)
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("15s")
		np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
			req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot)}
	})
	namespace(t, ns)
	rec := recordClaims(pool)
	underusedNodes(t, pool, ns, 1, podShape{cpu: "500m", memory: "512Mi"})
	peakPrice, _ := poolPrice(t, pool)
	eventually(t, 4*time.Minute, "the spot node to be replaced by a cheaper spot node", func() (bool, error) {
		nodes, err := nodesOf(pool)
		if err != nil {
			return false, err
		}
		price, _ := poolPrice(t, pool)
		running, other, _ := podCounts(ns)
		spot := len(nodes) == 1 && nodes[0].Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot
		return spot && price < peakPrice && running == 1 && other == 0,
			errorf("%d nodes at $%.4f/h (was $%.4f/h), %d pods running, %d not", len(nodes), price, peakPrice, running, other)
	})
	rec.Seen()
	if got := rec.Last().checkReplacedAfterInit(t); got != 1 {
		t.Errorf("%d spot NodeClaims went through a replacement, want 1; claims: %s", got, describeClaims(pool))
	}
	var pods corev1.PodList
	if err := kc.List(context.Background(), &pods); err == nil {
		for _, p := range pods.Items {
			if p.Namespace == ns && p.Labels["app"] == "small" && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodRunning {
				t.Errorf("pod %s is %s", p.Name, p.Status.Phase)
			}
		}
	}
}

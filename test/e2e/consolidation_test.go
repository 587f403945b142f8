package e2e

import (
	"context"
	"regexp"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/controller/disruption"
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
	final, err := claimsOf(pool)
	if err != nil {
		t.Fatalf("listing the pool's claims: %v", err)
	}
	left := map[string]bool{}
	for _, c := range final {
		left[c.Name] = true
	}
	// A Replace of several claims records the same replacements on each;
	// a Delete of several says how many in its DisruptionReason. A claim
	// counts as replaced when it was last seen with replacements and is now
	// deleting or gone: the recorder polls, and a drained claim can go
	// between two polls, so its deletion itself may never be seen.
	terminating := terminatingMessages(t)
	together := map[string][]string{}
	for name, c := range states {
		if reps := c.Annotations[planner.ReplacementsAnnotation]; reps != "" && (c.DeletionTimestamp != nil || !left[name]) {
			together["replace "+reps] = append(together["replace "+reps], name)
		}
		msg := ""
		if cond := meta.FindStatusCondition(c.Status.Conditions, karpv1.ConditionTypeDisruptionReason); cond != nil {
			msg = cond.Message
		} else {
			msg = terminating[name] // for a claim that went between two polls
		}
		if multiNodeMessage.MatchString(msg) {
			together["delete "+msg] = append(together["delete "+msg], name)
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
// cheaper spot node, launched and initialized first. The node is made
// under-used by a rollout that shrinks its one pod from 5 CPUs to 500m:
// kube-scheduler puts the new pod beside the old one, on the same node.
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
	deployment(t, ns, "app", 1, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "5", memory: "1Gi"})
	waitRunning(t, ns, 1, 4*time.Minute)
	first, err := nodesOf(pool)
	if err != nil || len(first) != 1 {
		t.Fatalf("want one node for one pod, have %d (%v)", len(first), err)
	}
	peakPrice := priceOf(first[0])
	setRequests(t, ns, "app", "500m", "512Mi")
	eventually(t, 4*time.Minute, "the spot node to be replaced by a cheaper spot node", func() (bool, error) {
		nodes, err := nodesOf(pool)
		if err != nil {
			return false, err
		}
		running, other, _ := podCounts(ns)
		ok := len(nodes) == 1 && nodes[0].Name != first[0].Name && nodes[0].Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot &&
			priceOf(nodes[0]) < peakPrice
		return ok && running == 1 && other == 0, errorf("%d nodes, %d pods running, %d not", len(nodes), running, other)
	})
	rec.Seen()
	states := rec.Last()
	states.checkReplacedAfterInit(t)
	nodes, _ := nodesOf(pool)
	reps := states[first[0].Name].Annotations[planner.ReplacementsAnnotation]
	if len(nodes) != 1 || reps != nodes[0].Name {
		t.Errorf("NodeClaim %s was replaced by %q, and the node left is not it: %s", first[0].Name, reps, describeClaims(pool))
	}
	if r := states.reason(first[0].Name); r != "" && r != string(karpv1.DisruptionReasonUnderutilized) {
		t.Errorf("NodeClaim %s disrupted as %s, want Underutilized", first[0].Name, r)
	}
	t.Logf("spot node %s at $%.4f/h replaced by %s at $%.4f/h", first[0].Name, peakPrice, nodes[0].Name, priceOf(nodes[0]))
}

// setRequests changes the requests of a Deployment's pods: a rollout.
func setRequests(t *testing.T, ns, name, cpu, memory string) {
	t.Helper()
	eventually(t, 30*time.Second, "new requests for "+name, func() (bool, error) {
		var d appsv1.Deployment
		if err := kc.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
			return false, err
		}
		d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
		err := kc.Update(context.Background(), &d)
		return err == nil, err
	})
}

// TestConsolidationValidatedBeforeActing: a node that went empty is chosen
// for deletion, but acts only after later loops decide the same for 15 s
// (Karpenter's validation). A pod that arrives meanwhile lands on it, the
// decision is not made again, and the node stays: no node is deleted and
// launched again for the same pod.
func TestConsolidationValidatedBeforeActing(t *testing.T) {
	t.Parallel()
	const pool, ns = "validate", "e2e-validate"
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		consolidating(karpv1.ConsolidationPolicyWhenEmpty)(np)
		upTo8CPUs(np)
	})
	namespace(t, ns)
	rec := recordClaims(pool)
	sel := map[string]string{karpv1.NodePoolLabelKey: pool}
	deployment(t, ns, "a", 1, sel, podShape{cpu: "5", memory: "1Gi"})
	deployment(t, ns, "b", 1, sel, podShape{cpu: "5", memory: "1Gi"})
	waitRunning(t, ns, 2, 4*time.Minute)
	nodeOfB := func() string {
		var pods corev1.PodList
		if err := kc.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": "b"}); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
				return p.Spec.NodeName
			}
		}
		return ""
	}
	nodeB := nodeOfB()
	claimB := ""
	if cs, err := claimsOf(pool); err == nil {
		for _, c := range cs {
			if c.Status.NodeName == nodeB {
				claimB = c.Name
			}
		}
	}
	if nodeB == "" || claimB == "" {
		t.Fatalf("no node or NodeClaim for b's pod: %s", describeClaims(pool))
	}

	scale(t, ns, "b", 0)
	eventually(t, time.Minute, "the emptied node to be chosen and held for validation", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		i := indexOf(cs, claimB)
		if i < 0 || cs[i].DeletionTimestamp != nil {
			t.Fatalf("NodeClaim %s was deleted without being held for validation", claimB)
		}
		c := meta.FindStatusCondition(cs[i].Status.Conditions, disruption.PreviewCondition)
		return c != nil && c.Reason == "Validating", errorf("preview %+v", c)
	})
	scale(t, ns, "b", 1)
	waitRunning(t, ns, 2, time.Minute)
	if got := nodeOfB(); got != nodeB {
		t.Errorf("b's new pod runs on %q, want the node it left, %s", got, nodeB)
	}
	// The decision is dropped by the next loop that sees the pod; by then
	// the preview no longer says Validating, and the claim is still there.
	eventually(t, 30*time.Second, "the held decision to be dropped", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		i := indexOf(cs, claimB)
		if i < 0 || cs[i].DeletionTimestamp != nil {
			return false, errorf("NodeClaim %s was deleted though a pod arrived before the validation ended", claimB)
		}
		c := meta.FindStatusCondition(cs[i].Status.Conditions, disruption.PreviewCondition)
		return c != nil && c.Reason != "Validating", errorf("preview %+v", c)
	})
	if seen := rec.Seen(); len(seen) != 2 {
		t.Errorf("NodeClaims seen %v, want the first two only", seen)
	}
}

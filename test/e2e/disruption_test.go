package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/controller/disruption"
	"github.com/nodewright/nodewright/internal/disruption/planner"
)

// consolidating makes a NodePool consolidate under-used nodes after 5s,
// with a budget of 100% unless the test sets another.
func consolidating(policy karpv1.ConsolidationPolicy) func(*karpv1.NodePool) {
	return func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidationPolicy = policy
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("5s")
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
	}
}

func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	var d appsv1.Deployment
	if err := kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &d); err != nil {
		t.Fatal(err)
	}
	before := d.DeepCopy()
	d.Spec.Replicas = &replicas
	if err := kc.Patch(context.Background(), &d, client.MergeFrom(before)); err != nil {
		t.Fatalf("scaling %s/%s to %d: %v", ns, name, replicas, err)
	}
}

// claimStates are the last states a claimRecorder saw of a pool's
// NodeClaims: a deleted claim keeps its deletionTimestamp, replacements and
// DisruptionReason there.
type claimStates map[string]karpv1.NodeClaim

// reason is a claim's DisruptionReason, or "" when it was never seen with one.
func (s claimStates) reason(name string) string {
	c, ok := s[name]
	if !ok {
		return ""
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, karpv1.ConditionTypeDisruptionReason); cond != nil {
		return cond.Reason
	}
	return ""
}

// checkReplacedAfterInit fails if a claim that had replacements was deleted
// before all of them were initialized, and returns how many were replaced.
func (s claimStates) checkReplacedAfterInit(t *testing.T) int {
	t.Helper()
	replaced := 0
	for name, c := range s {
		reps := c.Annotations[planner.ReplacementsAnnotation]
		if reps == "" || c.DeletionTimestamp == nil {
			continue
		}
		replaced++
		for _, r := range strings.Split(reps, ",") {
			rc, ok := s[r]
			if !ok {
				rc = allClaims.Last()[r]
			}
			cond := meta.FindStatusCondition(rc.Status.Conditions, karpv1.ConditionTypeInitialized)
			// Timestamps have a second's resolution.
			if cond == nil || cond.Status != metav1.ConditionTrue || cond.LastTransitionTime.After(c.DeletionTimestamp.Add(time.Second)) {
				t.Errorf("NodeClaim %s was deleted at %s before its replacement %s initialized (%v)", name, c.DeletionTimestamp, r, cond)
			}
		}
	}
	return replaced
}

// terminatingReasons reads, from the DisruptionTerminating events the
// controller records on NodeClaims ("Disrupting NodeClaim: Empty: ..."),
// why each claim was disrupted.
func terminatingReasons(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, rest := range terminatingEvents(t) {
		out[name], _, _ = strings.Cut(rest, ":")
	}
	return out
}

// terminatingMessages reads, from the same events, the message the
// disruption gave after its reason ("3 nodes: ..." for a multi-node
// command), by claim name.
func terminatingMessages(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, rest := range terminatingEvents(t) {
		if _, msg, ok := strings.Cut(rest, ": "); ok {
			out[name] = msg
		}
	}
	return out
}

// terminatingEvents returns each NodeClaim's DisruptionTerminating event
// text after "Disrupting NodeClaim: ", by claim name.
func terminatingEvents(t *testing.T) map[string]string {
	t.Helper()
	var evs corev1.EventList
	if err := kc.List(context.Background(), &evs); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind != "NodeClaim" || e.Reason != "DisruptionTerminating" {
			continue
		}
		if rest, ok := strings.CutPrefix(e.Message, "Disrupting NodeClaim: "); ok {
			out[e.InvolvedObject.Name] = rest
		}
	}
	return out
}

func poolPrice(t *testing.T, pool string) (float64, int) {
	t.Helper()
	nodes, err := nodesOf(pool)
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, n := range nodes {
		total += priceOf(n)
	}
	return total, len(nodes)
}

// TestConsolidationDeletesAndReplaces: a Deployment scaled from 16 pods to 3
// leaves under-used and empty nodes; consolidation removes them, replacing
// where a cheaper node holds the rest, and never deletes a node before its
// replacement is initialized. Every pod keeps running.
func TestConsolidationDeletesAndReplaces(t *testing.T) {
	t.Parallel()
	const pool, ns = "consolidate", "e2e-consolidate"
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, consolidating(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized))
	namespace(t, ns)
	rec := recordClaims(pool)
	sel := map[string]string{karpv1.NodePoolLabelKey: pool}
	deployment(t, ns, "web", 16, sel, podShape{cpu: "1500m", memory: "1Gi"})
	waitRunning(t, ns, 16, 4*time.Minute)
	peakPrice, peakNodes := poolPrice(t, pool)
	scale(t, ns, "web", 3)
	eventually(t, 4*time.Minute, "consolidation to settle below the peak", func() (bool, error) {
		price, n := poolPrice(t, pool)
		cs, _ := claimsOf(pool)
		running, other, _ := podCounts(ns)
		return n < peakNodes && price < peakPrice/2 && len(cs) == n && running == 3 && other == 0,
			errorf("%d nodes at $%.3f/h (peak %d at $%.3f/h), %d claims, %d pods running, %d not", n, price, peakNodes, peakPrice, len(cs), running, other)
	})
	rec.Seen()
	states := rec.Last()
	replaced := states.checkReplacedAfterInit(t)
	reasons := map[string]int{}
	told := terminatingReasons(t)
	for name := range states {
		r := states.reason(name)
		if r == "" {
			// An empty node goes within a poll: its event says why.
			r = told[name]
		}
		if r != "" {
			reasons[r]++
		}
	}
	price, n := poolPrice(t, pool)
	t.Logf("peak %d nodes $%.3f/h -> %d nodes $%.3f/h; disrupted by reason %v; %d replaced after their replacements initialized",
		peakNodes, peakPrice, n, price, reasons, replaced)
	if reasons[string(karpv1.DisruptionReasonEmpty)]+reasons[string(karpv1.DisruptionReasonUnderutilized)] == 0 {
		t.Errorf("no NodeClaim was disrupted as Empty or Underutilized: %v", reasons)
	}
}

// TestDriftReplacesNodesBeforeDraining: a NodePool template change marks its
// nodes drifted; each is replaced by a node of the new template, launched
// and initialized before the old one drains.
func TestDriftReplacesNodesBeforeDraining(t *testing.T) {
	t.Parallel()
	const pool, ns = "drift", "e2e-drift"
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
	})
	namespace(t, ns)
	rec := recordClaims(pool)
	sel := map[string]string{karpv1.NodePoolLabelKey: pool}
	deployment(t, ns, "app", 4, sel, podShape{cpu: "1500m", memory: "1Gi"})
	waitRunning(t, ns, 4, 4*time.Minute)
	patchPool(t, pool, func(np *karpv1.NodePool) { np.Spec.Template.Labels = map[string]string{"release": "two"} })
	eventually(t, 5*time.Minute, "every node to carry the new template's label", func() (bool, error) {
		nodes, err := nodesOf(pool)
		if err != nil {
			return false, err
		}
		old := 0
		for _, n := range nodes {
			if n.Labels["release"] != "two" {
				old++
			}
		}
		running, other, _ := podCounts(ns)
		return old == 0 && len(nodes) > 0 && running == 4 && other == 0, errorf("%d of %d nodes still old, %d pods running, %d not", old, len(nodes), running, other)
	})
	rec.Seen()
	states := rec.Last()
	if got := states.checkReplacedAfterInit(t); got == 0 {
		t.Errorf("no drifted NodeClaim went through a replacement")
	}
	for name := range states {
		if r := states.reason(name); r != "" && r != string(karpv1.DisruptionReasonDrifted) {
			t.Errorf("NodeClaim %s disrupted as %s, want Drifted", name, r)
		}
	}
}

// TestImageDriftReplacesNodes: a new machine image on the KWOKNodeClass
// drifts every node of it (the cloud provider's ImageDrift); each is
// replaced by a node of the new image before it drains.
func TestImageDriftReplacesNodes(t *testing.T) {
	t.Parallel()
	const pool, ns = "image", "e2e-image"
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) { np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}} })
	namespace(t, ns)
	rec := recordClaims(pool)
	deployment(t, ns, "app", 3, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "1500m", memory: "1Gi"})
	waitRunning(t, ns, 3, 4*time.Minute)
	eventually(t, 30*time.Second, "a new image on the KWOKNodeClass", func() (bool, error) {
		var nc kwokv1alpha1.KWOKNodeClass
		if err := kc.Get(context.Background(), types.NamespacedName{Name: pool}, &nc); err != nil {
			return false, err
		}
		nc.Spec.Image = "kwok-image-v2"
		err := kc.Update(context.Background(), &nc)
		return err == nil, err
	})
	eventually(t, 5*time.Minute, "every NodeClaim to run the new image", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		old := 0
		for _, c := range cs {
			if c.Status.ImageID != "kwok-image-v2" {
				old++
			}
		}
		running, other, _ := podCounts(ns)
		return old == 0 && len(cs) > 0 && running == 3 && other == 0, errorf("%d of %d claims on the old image, %d pods running, %d not", old, len(cs), running, other)
	})
	rec.Seen()
	states := rec.Last()
	if states.checkReplacedAfterInit(t) == 0 {
		t.Errorf("no NodeClaim went through a replacement")
	}
	for name, c := range states {
		if cond := meta.FindStatusCondition(c.Status.Conditions, karpv1.ConditionTypeDrifted); cond != nil && cond.Reason != "ImageDrift" {
			t.Errorf("NodeClaim %s drifted for %s, want ImageDrift", name, cond.Reason)
		}
	}
}

// TestExpiredNodesAreReplaced: with expireAfter 45s every node goes once it
// is that old, whatever the budgets say, and its pods run elsewhere.
func TestExpiredNodesAreReplaced(t *testing.T) {
	t.Parallel()
	const pool, ns = "expire", "e2e-expire"
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("45s")
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
	})
	namespace(t, ns)
	rec := recordClaims(pool)
	deployment(t, ns, "app", 2, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "1", memory: "1Gi"})
	waitRunning(t, ns, 2, 4*time.Minute)
	ran := time.Now()
	first, err := claimsOf(pool)
	if err != nil {
		t.Fatal(err)
	}
	// A claim may be drained and gone between two looks, so its
	// DisruptionReason is checked only where it was seen.
	eventually(t, 4*time.Minute, "the first NodeClaims to expire", func() (bool, error) {
		states := rec.Last()
		for _, c := range first {
			if states[c.Name].DeletionTimestamp == nil && states.reason(c.Name) == "" {
				if cs, err := claimsOf(pool); err == nil && !hasClaim(cs, c.Name) {
					continue
				}
				return false, errorf("NodeClaim %s not yet expired", c.Name)
			}
		}
		return true, nil
	})
	rec.Seen()
	states := rec.Last()
	for _, c := range first {
		if r := states.reason(c.Name); r != "" && r != string(planner.ReasonExpired) {
			t.Errorf("NodeClaim %s disrupted as %s, want Expired", c.Name, r)
		}
	}
	waitRunning(t, ns, 2, 4*time.Minute)
	// The expired nodes' pods had no room elsewhere: a node was launched
	// for them before they were evicted, so none waited, pending, for one.
	if fails := unschedulableSince(t, ns, ran); len(fails) > 0 {
		t.Errorf("evicted pods waited for a node: %v", fails)
	}
}

// unschedulableSince lists kube-scheduler's FailedScheduling events in ns
// after t: a pod that found no node.
func unschedulableSince(t *testing.T, ns string, since time.Time) []string {
	t.Helper()
	var evs corev1.EventList
	if err := kc.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing events: %v", err)
	}
	var out []string
	for _, e := range evs.Items {
		at := e.LastTimestamp.Time
		if e.EventTime.After(at) {
			at = e.EventTime.Time
		}
		if e.Reason == "FailedScheduling" && e.Source.Component != "nodewright" && e.ReportingController != "nodewright" && at.After(since) {
			out = append(out, fmt.Sprintf("%s %s: %s", at.Format("15:04:05"), e.InvolvedObject.Name, e.Message))
		}
	}
	return out
}

// TestBudgetsAndDoNotDisruptHoldNodes: an empty node is kept while the
// NodePool's scheduled Empty budget allows 0, and the NodePool and NodeClaim say why; a
// node running a do-not-disrupt pod is kept from consolidation, and its
// preview names the pod. Raising the budget lets the empty node go.
func TestBudgetsAndDoNotDisruptHoldNodes(t *testing.T) {
	t.Parallel()
	const pool, ns = "held", "e2e-held"
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		consolidating(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized)(np)
		// A window open all day: every minute opens one an hour long.
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonEmpty},
			Schedule: ptr("* * * * *"), Duration: &metav1.Duration{Duration: time.Hour}}}
	})
	namespace(t, ns)
	sel := map[string]string{karpv1.NodePoolLabelKey: pool}
	keeper := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keeper",
		Annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}},
		Spec: corev1.PodSpec{NodeSelector: sel, TerminationGracePeriodSeconds: ptr(int64(0)),
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}}}
	if err := kc.Create(context.Background(), keeper); err != nil {
		t.Fatal(err)
	}
	// One filler per node, so that there are empty nodes for the budget to
	// hold (the solver would put four fillers on one node).
	deployment(t, ns, "filler", 4, sel, podShape{cpu: "1500m", memory: "1Gi", mutate: func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "filler"}}}}}}
	}})
	waitRunning(t, ns, 5, 4*time.Minute)
	if err := kc.Get(context.Background(), client.ObjectKeyFromObject(keeper), keeper); err != nil {
		t.Fatal(err)
	}
	scale(t, ns, "filler", 0)
	eventually(t, 2*time.Minute, "the keeper's node to be held by its pod, and empty nodes by the budget", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		heldByPod, heldByBudget := false, 0
		for _, c := range cs {
			cond := meta.FindStatusCondition(c.Status.Conditions, disruption.PreviewCondition)
			if cond == nil {
				continue
			}
			if c.Status.NodeName == keeper.Spec.NodeName && strings.Contains(cond.Message, "e2e-held/keeper") {
				heldByPod = true
			}
			if c.Status.NodeName != keeper.Spec.NodeName && strings.Contains(cond.Message, "Empty budget") {
				heldByBudget++
			}
		}
		return heldByPod && len(cs) > 1 && heldByBudget == len(cs)-1, errorf("held by the pod: %v, by the budget: %d of %d", heldByPod, heldByBudget, len(cs)-1)
	})
	var np karpv1.NodePool
	if err := kc.Get(context.Background(), types.NamespacedName{Name: pool}, &np); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(np.Status.Conditions, disruption.BudgetsCondition)
	if cond == nil || !strings.Contains(cond.Message, "Empty: 0") {
		t.Errorf("NodePool budgets condition = %+v, want it to say Empty: 0", cond)
	}
	patchPool(t, pool, func(np *karpv1.NodePool) { np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}} })
	eventually(t, 2*time.Minute, "only the keeper's node to remain", func() (bool, error) {
		nodes, err := nodesOf(pool)
		if err != nil {
			return false, err
		}
		return len(nodes) == 1 && nodes[0].Name == keeper.Spec.NodeName, errorf("%d nodes", len(nodes))
	})
	if err := kc.Get(context.Background(), client.ObjectKeyFromObject(keeper), keeper); err != nil || keeper.DeletionTimestamp != nil {
		t.Errorf("the do-not-disrupt pod was disrupted: %v", err)
	}
}

// TestTerminationGracePeriodBoundsDriftOfProtectedNode: drift replaces a
// node despite its do-not-disrupt pod when the NodeClaim has a
// terminationGracePeriod; the pod is left alone until the deadline draws
// near and deleted then.
func TestTerminationGracePeriodBoundsDriftOfProtectedNode(t *testing.T) {
	t.Parallel()
	const pool, ns = "grace", "e2e-grace"
	const grace = 30 * time.Second
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: grace}
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
	})
	namespace(t, ns)
	job := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "job",
		Annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{karpv1.NodePoolLabelKey: pool}, TerminationGracePeriodSeconds: ptr(int64(5)),
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	if err := kc.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ns, 1, 4*time.Minute)
	patchPool(t, pool, func(np *karpv1.NodePool) { np.Spec.Template.Labels = map[string]string{"image": "new"} })
	var deleted time.Time
	eventually(t, 3*time.Minute, "the drifted NodeClaim to be deleted", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		for _, c := range cs {
			if c.DeletionTimestamp != nil {
				deleted = c.DeletionTimestamp.Time
				return true, nil
			}
		}
		return false, errorf("%d claims, none deleting", len(cs))
	})
	var podGone time.Time
	eventually(t, 2*time.Minute, "the do-not-disrupt pod to be deleted at the deadline", func() (bool, error) {
		var p corev1.Pod
		err := kc.Get(context.Background(), client.ObjectKeyFromObject(job), &p)
		if apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil) {
			podGone = time.Now()
			return true, nil
		}
		return false, errorf("pod still there (err %v)", err)
	})
	// Deleted at deadline minus its own 5s grace, so not before 25s after
	// the NodeClaim's deletion (timestamps have a second's resolution).
	if early := podGone.Sub(deleted); early < grace-5*time.Second-time.Second {
		t.Errorf("the do-not-disrupt pod went %s after its NodeClaim's deletion, before the grace period's deadline allowed", early)
	}
	eventually(t, 2*time.Minute, "the old node to be gone", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		for _, c := range cs {
			if c.DeletionTimestamp != nil {
				return false, errorf("%s still terminating", c.Name)
			}
		}
		return true, nil
	})
}

func patchPool(t *testing.T, name string, mutate func(*karpv1.NodePool)) {
	t.Helper()
	eventually(t, 30*time.Second, "patching NodePool "+name, func() (bool, error) {
		var np karpv1.NodePool
		if err := kc.Get(context.Background(), types.NamespacedName{Name: name}, &np); err != nil {
			return false, err
		}
		mutate(&np)
		err := kc.Update(context.Background(), &np)
		return err == nil, err
	})
}

var errorf = fmt.Errorf

var builtinTypes = kwok.Build(kwok.BuiltinCatalog(), kwok.Options{VMMemoryOverheadPercent: 0.075})

// priceOf is the hourly price of a node's offering in the built-in catalog.
func priceOf(n corev1.Node) float64 {
	for _, it := range builtinTypes {
		if it.Name != n.Labels[corev1.LabelInstanceTypeStable] {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == n.Labels[corev1.LabelTopologyZone] && o.CapacityType == n.Labels[karpv1.CapacityTypeLabelKey] {
				return o.Price
			}
		}
	}
	return 0
}

func hasClaim(cs []karpv1.NodeClaim, name string) bool {
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}

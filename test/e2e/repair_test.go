package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/controller/disruption"
	"github.com/nodewright/nodewright/internal/disruption/planner"
)

// repairToleration is the controller's --kwok-repair-toleration here
// (controllerArgs): how long a node may be not Ready before it is repaired.
const repairToleration = 30 * time.Second

// TestNodeRepair breaks one of three nodes for good with the kwok fault
// (Ready=False until the annotation goes). Not before the toleration has
// passed, the disruption controller replaces it, reason Unhealthy: its
// pod, which no other node may take, keeps running until a replacement
// NodeClaim has initialized, and every pod ends Running on healthy nodes.
func TestNodeRepair(t *testing.T) {
	t.Parallel()
	const pool, ns, n = "repair", "e2e-repair", 3
	claims := spreadOverNodes(t, pool, ns, n)
	victim := claims[0]
	node := victim.Status.NodeName
	before := map[string]bool{}
	for _, c := range claims {
		before[c.Name] = true
	}
	annotateNode(t, node, map[string]string{kwok.UnhealthyAnnotation: "Ready"})
	asked := time.Now()

	var brokeAt, chosenAt time.Time
	var replacement *karpv1.NodeClaim
	early := ""
	eventually(t, repairToleration+4*time.Minute, "unhealthy node "+node+" to be replaced", func() (bool, error) {
		// Pods first, claims second: a pod missing before any replacement
		// was initialized is then proof that the drain did not wait.
		running, _, err := podCounts(ns)
		if err != nil {
			return false, err
		}
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		victimThere := false
		for i := range cs {
			c := cs[i]
			if c.Name == victim.Name {
				victimThere = true
				if chosenAt.IsZero() && chosen(c) {
					chosenAt = time.Now()
				}
			}
			if replacement == nil && !before[c.Name] && meta.IsStatusConditionTrue(c.Status.Conditions, karpv1.ConditionTypeInitialized) {
				replacement = &c
			}
		}
		if replacement == nil && running < n && early == "" {
			early = fmt.Sprintf("%d of %d pods Running %v after the fault, and no replacement initialized:%s",
				running, n, time.Since(asked).Round(time.Millisecond), describeClaims(pool))
		}
		var nd corev1.Node
		err = kc.Get(context.Background(), client.ObjectKey{Name: node}, &nd)
		if client.IgnoreNotFound(err) != nil {
			return false, err
		}
		if err == nil {
			if r := brokenReady(&nd); r != nil && brokeAt.IsZero() {
				brokeAt = r.LastTransitionTime.Time
			}
		}
		if apierrors.IsNotFound(err) && !victimThere {
			return true, nil
		}
		return false, fmt.Errorf("node %s (broken at %v) or its NodeClaim still there; pods Running %d:%s", node, brokeAt, running, describeClaims(pool))
	})
	if brokeAt.IsZero() {
		t.Fatalf("node %s was never seen Ready=False, reason %s: the fault did not happen, so the test proves nothing", node, kwok.UnhealthyReason)
	}
	if early != "" {
		t.Errorf("node %s was drained before its replacement was up: %s", node, early)
	}
	if replacement == nil {
		t.Fatalf("node %s went before any replacement NodeClaim initialized:%s", node, describeClaims(pool))
	}
	// The planner counts from the same stored transition time, so a choice
	// seen earlier than the toleration after it was made too early.
	if !chosenAt.IsZero() && chosenAt.Sub(brokeAt) < repairToleration {
		t.Errorf("NodeClaim %s chosen for repair %v after its node broke, before the toleration of %v", victim.Name, chosenAt.Sub(brokeAt), repairToleration)
	}
	// The planner's replace command, not only the drain's wait for room,
	// launched the replacement: the event names the failed policy.
	expectEvent(t, "NodeClaim", victim.Name, "DisruptionLaunching", string(planner.ReasonUnhealthy)+": node condition Ready has been False")
	expectEvent(t, "NodeClaim", victim.Name, "DisruptionTerminating", string(planner.ReasonUnhealthy))
	t.Logf("node %s broke at %v; chosen %v later, replaced by %s, gone %v after the fault", node, brokeAt.Format(time.TimeOnly),
		chosenAt.Sub(brokeAt).Round(time.Second), replacement.Name, time.Since(asked).Round(time.Second))
	waitRunning(t, ns, n, 3*time.Minute)
	expectHealthy(t, pool, n)
}

// TestNodeRepairBlockedWhileManyUnhealthy breaks two of three nodes at one
// instant, more than the 20% node repair allows. Past the toleration the
// NodePool says so (NodeRepairAllowed=False, TooManyUnhealthyNodes, and a
// NodeRepairBlocked event) and, while that holds, no node is disrupted.
// Then one node heals: the other alone is unhealthy, within the 20%, so it
// is repaired and the condition turns True again.
func TestNodeRepairBlockedWhileManyUnhealthy(t *testing.T) {
	t.Parallel()
	const pool, ns, n = "repair-blocked", "e2e-repair-blocked", 3
	claims := spreadOverNodes(t, pool, ns, n)
	healed, broken := claims[0], claims[1]
	// One fault start for both, so that they pass the toleration in the
	// same disruption loop: one alone would be within the 20% and repaired.
	since := time.Now().UTC().Truncate(time.Second)
	for _, c := range []karpv1.NodeClaim{healed, broken} {
		annotateNode(t, c.Status.NodeName, map[string]string{kwok.UnhealthyAnnotation: "Ready", kwok.UnhealthySinceAnnotation: since.Format(time.RFC3339)})
	}

	// noneDisrupted fails the test at once if a NodeClaim of the pool is
	// chosen for disruption while repair should be blocked.
	noneDisrupted := func(cs []karpv1.NodeClaim, when string) {
		t.Helper()
		for _, c := range cs {
			if chosen(c) {
				t.Fatalf("NodeClaim %s was disrupted %s, while 2 of %d nodes were unhealthy:%s", c.Name, when, n, describeClaims(pool))
			}
		}
	}
	eventually(t, repairToleration+3*time.Minute, "NodeRepairAllowed=False and a NodeRepairBlocked event on NodePool "+pool, func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		noneDisrupted(cs, "before repair was blocked")
		for _, c := range []karpv1.NodeClaim{healed, broken} {
			var nd corev1.Node
			if err := kc.Get(context.Background(), client.ObjectKey{Name: c.Status.NodeName}, &nd); err != nil {
				return false, err
			}
			if r := brokenReady(&nd); r == nil || !r.LastTransitionTime.Time.Equal(since) {
				return false, fmt.Errorf("node %s not broken since %v: Ready %+v", nd.Name, since, r)
			}
		}
		cond, err := repairAllowed(pool)
		if err != nil || cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "TooManyUnhealthyNodes" {
			return false, fmt.Errorf("condition %+v (err %v)", cond, err)
		}
		return hasEvent("NodePool", pool, "NodeRepairBlocked", "2 of the 3 nodes")
	})
	// Five disruption loops at least (--disruption-interval=2s) decide
	// again with both nodes past the toleration; none may repair.
	hold := time.Now().Add(10 * time.Second)
	for time.Now().Before(hold) {
		cs, err := claimsOf(pool)
		if err != nil {
			t.Fatal(err)
		}
		noneDisrupted(cs, "while repair was blocked")
		if cond, err := repairAllowed(pool); err == nil && (cond == nil || cond.Status != metav1.ConditionFalse) {
			t.Fatalf("NodeRepairAllowed turned %+v while 2 of %d nodes were still unhealthy", cond, n)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Heal one: kwok reports it again, and the other is repaired.
	removeNodeAnnotation(t, healed.Status.NodeName, kwok.UnhealthyAnnotation)
	eventually(t, 4*time.Minute, "the still broken node "+broken.Status.NodeName+" to be replaced and NodeRepairAllowed=True", func() (bool, error) {
		var nd corev1.Node
		if err := kc.Get(context.Background(), client.ObjectKey{Name: healed.Status.NodeName}, &nd); err != nil {
			return false, fmt.Errorf("healed node: %w", err)
		}
		if r := readyOf(&nd); r == nil || r.Status != corev1.ConditionTrue {
			return false, fmt.Errorf("healed node %s: Ready %+v", nd.Name, r)
		}
		var c karpv1.NodeClaim
		if err := kc.Get(context.Background(), client.ObjectKey{Name: healed.Name}, &c); err != nil || chosen(c) {
			return false, fmt.Errorf("healed NodeClaim %s disrupted or gone (err %v)", healed.Name, err)
		}
		err := kc.Get(context.Background(), client.ObjectKey{Name: broken.Name}, &c)
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("broken NodeClaim %s still there (err %v):%s", broken.Name, err, describeClaims(pool))
		}
		cond, err := repairAllowed(pool)
		if err != nil || cond == nil || cond.Status != metav1.ConditionTrue {
			return false, fmt.Errorf("condition %+v (err %v)", cond, err)
		}
		return true, nil
	})
	expectEvent(t, "NodeClaim", broken.Name, "DisruptionTerminating", string(planner.ReasonUnhealthy))
	waitRunning(t, ns, n, 3*time.Minute)
	expectHealthy(t, pool, n)
}

// spreadOverNodes runs n pods of a new NodePool that no two may share a node
// on, and returns the n NodeClaims they run on. The pods tolerate not-ready
// and unreachable nodes for five minutes, as the DefaultTolerationSeconds
// admission plugin, which this cluster does not run, gives every pod of a
// real cluster; without it kube-controller-manager would evict the pods of a
// broken node at once, and repair would have nothing to move.
func spreadOverNodes(t *testing.T, pool, ns string, n int) []karpv1.NodeClaim {
	t.Helper()
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, nil)
	namespace(t, ns)
	deployment(t, ns, "app", int32(n), map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "500m", memory: "256Mi", mutate: func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}}}}}}
		s.Tolerations = []corev1.Toleration{
			{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
			{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
		}
	}})
	waitRunning(t, ns, n, 3*time.Minute)
	var out []karpv1.NodeClaim
	eventually(t, time.Minute, fmt.Sprintf("%d initialized NodeClaims", n), func() (bool, error) {
		cs, err := claimsOf(pool)
		out = nil
		for _, c := range cs {
			if c.Status.NodeName != "" && c.DeletionTimestamp == nil && meta.IsStatusConditionTrue(c.Status.Conditions, karpv1.ConditionTypeInitialized) {
				out = append(out, c)
			}
		}
		return err == nil && len(out) == n, fmt.Errorf("%d initialized (err %v):%s", len(out), err, describeClaims(pool))
	})
	return out
}

// chosen reports that a disruption has taken the NodeClaim: marked for a
// replacement, or being deleted.
func chosen(c karpv1.NodeClaim) bool {
	return c.DeletionTimestamp != nil || c.Annotations[planner.DisruptingAnnotation] != ""
}

func readyOf(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// brokenReady returns the Node's Ready condition when the kwok fault has
// broken it, or nil.
func brokenReady(n *corev1.Node) *corev1.NodeCondition {
	if r := readyOf(n); r != nil && r.Status == corev1.ConditionFalse && r.Reason == kwok.UnhealthyReason {
		return r
	}
	return nil
}

func repairAllowed(pool string) (*metav1.Condition, error) {
	var np karpv1.NodePool
	if err := kc.Get(context.Background(), client.ObjectKey{Name: pool}, &np); err != nil {
		return nil, err
	}
	return meta.FindStatusCondition(np.Status.Conditions, disruption.ConditionNodeRepairAllowed), nil
}

// hasEvent reports whether an event of reason, whose message contains
// text, was recorded on the object.
func hasEvent(kind, name, reason, text string) (bool, error) {
	var evs corev1.EventList
	if err := kc.List(context.Background(), &evs); err != nil {
		return false, err
	}
	var seen []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind != kind || e.InvolvedObject.Name != name {
			continue
		}
		if e.Reason == reason && strings.Contains(e.Message, text) {
			return true, nil
		}
		seen = append(seen, e.Reason+": "+e.Message)
	}
	return false, fmt.Errorf("no %s event containing %q on %s %s; its events: %q", reason, text, kind, name, seen)
}

// expectEvent waits a little for an event: the recorder sends events
// asynchronously.
func expectEvent(t *testing.T, kind, name, reason, text string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("a %s event on %s %s", reason, kind, name), func() (bool, error) {
		return hasEvent(kind, name, reason, text)
	})
}

// expectHealthy checks that the pool has n NodeClaims, none disrupted,
// whose nodes are Ready.
func expectHealthy(t *testing.T, pool string, n int) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("%d NodeClaims of %s on Ready nodes", n, pool), func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		ready := 0
		for _, c := range cs {
			var nd corev1.Node
			if chosen(c) || kc.Get(context.Background(), client.ObjectKey{Name: c.Status.NodeName}, &nd) != nil {
				continue
			}
			if r := readyOf(&nd); r != nil && r.Status == corev1.ConditionTrue {
				ready++
			}
		}
		return ready == n && len(cs) == n, fmt.Errorf("%d claims, %d healthy and Ready:%s", len(cs), ready, describeClaims(pool))
	})
}

func removeNodeAnnotation(t *testing.T, name, key string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: nil}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := kc.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatalf("removing annotation %s from Node %s: %v", key, name, err)
	}
}

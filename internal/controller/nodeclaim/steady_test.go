package nodeclaim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/testkube"
)

func condition(nc *karpv1.NodeClaim, typ string) *metav1.Condition {
	return meta.FindStatusCondition(nc.Status.Conditions, typ)
}

// TestConsolidatableAndConsistentState, against a real API server with the
// lifecycle controller running: an initialized claim is ConsistentStateFound
// at once and Consolidatable consolidateAfter later; a pod event takes
// Consolidatable away until consolidateAfter has passed again; a node that
// reports less memory than the claim promised is inconsistent, with a
// warning event, and consistent again once it reports it; consolidateAfter
// Never removes Consolidatable.
func TestConsolidatableAndConsistentState(t *testing.T) {
	ctx := context.Background()
	runControllers(t, DefaultOptions())
	createClass(t, "cs", 0)
	np := createPool(t, "cs", "cs", "4s", 0)
	createClaim(t, np, "cs-1")
	waitClaim(t, "cs-1", "registered", func(nc *karpv1.NodeClaim) bool {
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeRegistered)
	})
	markReady(t, "cs-1")
	nc := waitClaim(t, "cs-1", "initialized and ConsistentStateFound", func(nc *karpv1.NodeClaim) bool {
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) &&
			meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeConsistentStateFound)
	})
	initialized := condition(nc, karpv1.ConditionTypeInitialized).LastTransitionTime.Time
	nc = waitClaim(t, "cs-1", "Consolidatable", func(nc *karpv1.NodeClaim) bool {
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeConsolidatable)
	})
	// Times are written to the second.
	if at := condition(nc, karpv1.ConditionTypeConsolidatable).LastTransitionTime.Time; at.Before(initialized.Add(3 * time.Second)) {
		t.Errorf("Consolidatable at %s, initialized at %s: before consolidateAfter (4s) passed", at, initialized)
	}

	// A pod event, as the disruption controller writes it.
	before := nc.DeepCopy()
	event := time.Now().Truncate(time.Second)
	nc.Status.LastPodEventTime = metav1.NewTime(event)
	if err := cluster.Client.Status().Patch(ctx, nc, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	waitClaim(t, "cs-1", "Consolidatable removed after a pod event", func(nc *karpv1.NodeClaim) bool {
		return condition(nc, karpv1.ConditionTypeConsolidatable) == nil
	})
	nc = waitClaim(t, "cs-1", "Consolidatable again", func(nc *karpv1.NodeClaim) bool {
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeConsolidatable)
	})
	if at := condition(nc, karpv1.ConditionTypeConsolidatable).LastTransitionTime.Time; at.Before(event.Add(4 * time.Second)) {
		t.Errorf("Consolidatable again at %s, pod event at %s: before consolidateAfter (4s) passed", at, event)
	}

	// The node turns out to have a quarter of the memory promised.
	node := &corev1.Node{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: "cs-1"}, node); err != nil {
		t.Fatal(err)
	}
	promised := nc.Status.Capacity[corev1.ResourceMemory]
	short := resource.NewQuantity(promised.Value()/4, resource.BinarySI)
	setMemory := func(q resource.Quantity) {
		t.Helper()
		testkube.Eventually(t, 30*time.Second, "node memory set to "+q.String(), func() (bool, error) {
			n := &corev1.Node{}
			if err := cluster.Client.Get(ctx, client.ObjectKey{Name: "cs-1"}, n); err != nil {
				return false, err
			}
			n.Status.Capacity[corev1.ResourceMemory] = q
			err := cluster.Client.Status().Update(ctx, n)
			return err == nil, err
		})
	}
	setMemory(*short)
	nc = waitClaim(t, "cs-1", "ConsistentStateFound False", func(nc *karpv1.NodeClaim) bool {
		c := condition(nc, karpv1.ConditionTypeConsistentStateFound)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	c := condition(nc, karpv1.ConditionTypeConsistentStateFound)
	wantMsg := fmt.Sprintf("expected %s of resource memory, but found %s (25.0%% of expected)", promised.String(), short.String())
	if c.Reason != ReasonConsistencyCheckFailed || c.Message != wantMsg {
		t.Errorf("ConsistentStateFound %s %q, want %s %q", c.Reason, c.Message, ReasonConsistencyCheckFailed, wantMsg)
	}
	testkube.Eventually(t, 30*time.Second, "a FailedConsistencyCheck event", func() (bool, error) {
		var events corev1.EventList
		if err := cluster.Client.List(ctx, &events); err != nil {
			return false, err
		}
		var seen []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "cs-1" && e.InvolvedObject.Kind == "NodeClaim" {
				seen = append(seen, e.Reason+": "+e.Message)
				if e.Reason == EventFailedConsistencyCheck && e.Type == corev1.EventTypeWarning && e.Message == wantMsg {
					return true, nil
				}
			}
		}
		return false, fmt.Errorf("events of cs-1: %s", strings.Join(seen, " | "))
	})
	setMemory(promised)
	waitClaim(t, "cs-1", "ConsistentStateFound True again", func(nc *karpv1.NodeClaim) bool {
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeConsistentStateFound)
	})

	// consolidateAfter: Never turns consolidation off.
	cur := &karpv1.NodePool{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: "cs"}, cur); err != nil {
		t.Fatal(err)
	}
	poolBefore := cur.DeepCopy()
	cur.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration(karpv1.Never)
	if err := cluster.Client.Patch(ctx, cur, client.MergeFrom(poolBefore)); err != nil {
		t.Fatal(err)
	}
	waitClaim(t, "cs-1", "Consolidatable removed with consolidateAfter Never", func(nc *karpv1.NodeClaim) bool {
		return condition(nc, karpv1.ConditionTypeConsolidatable) == nil
	})
}

// TestConsistentStateNamesABlockingPDB, against a real API server with the
// lifecycle controller running and no termination controller (so the drain
// never ends): a deleted claim whose node holds a pod that a
// PodDisruptionBudget allows no disruption of is inconsistent once the
// drain has lasted the consistency interval, naming the PDB.
func TestConsistentStateNamesABlockingPDB(t *testing.T) {
	ctx := context.Background()
	opts := DefaultOptions()
	opts.ConsistencyInterval = 2 * time.Second
	runControllers(t, opts)
	createClass(t, "pdb", 0)
	np := createPool(t, "pdb", "pdb", "0s", 0)
	nc := createClaim(t, np, "pdb-1")
	waitClaim(t, "pdb-1", "registered", func(nc *karpv1.NodeClaim) bool {
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeRegistered)
	})
	markReady(t, "pdb-1")
	waitClaim(t, "pdb-1", "ConsistentStateFound", func(nc *karpv1.NodeClaim) bool {
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeConsistentStateFound)
	})

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pdb-web", Labels: map[string]string{"app": "pdb-web"}},
		Spec: corev1.PodSpec{NodeName: "pdb-1", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if err := cluster.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if err := cluster.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pdb-web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pdb-web"}}}}
	if err := cluster.Client.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), pdb) })
	// As the disruption controller of kube-controller-manager would say.
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if err := cluster.Client.Status().Update(ctx, pdb); err != nil {
		t.Fatal(err)
	}

	if err := cluster.Client.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	got := waitClaim(t, "pdb-1", "ConsistentStateFound False", func(nc *karpv1.NodeClaim) bool {
		c := condition(nc, karpv1.ConditionTypeConsistentStateFound)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	c := condition(got, karpv1.ConditionTypeConsistentStateFound)
	if want := `can't drain node pdb-1, PDB "default/pdb-web" is blocking evictions`; c.Message != want {
		t.Errorf("ConsistentStateFound message %q, want %q", c.Message, want)
	}
	if waited := c.LastTransitionTime.Sub(got.DeletionTimestamp.Time); waited < time.Second {
		t.Errorf("checked %s after the deletion, before the drain had lasted the interval (2s)", waited)
	}
}

package e2e

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/planner"
)

// TestStaticNodePool runs a NodePool with spec.replicas as a user would:
// it launches its replicas with no pod asking, all of the pool's cheapest
// type; a pod that does not fit its nodes stays pending, with no node
// launched for it; `kubectl scale nodepool` to 1 removes the two empty
// nodes and keeps the one running a pod; and a template edit replaces the
// last node by drift, the replacement launched before the old node goes.
func TestStaticNodePool(t *testing.T) {
	t.Parallel()
	const pool, ns = "static", "e2e-static"
	ctx := context.Background()
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		np.Spec.Replicas = ptr(int64(3))
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large", "c5.xlarge", "m5.large"))
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1"}}
	})
	namespace(t, ns)

	initialized := func(want int) func() (bool, error) {
		return func() (bool, error) {
			cs, err := claimsOf(pool)
			if err != nil {
				return false, err
			}
			n := 0
			for _, c := range cs {
				if c.DeletionTimestamp == nil && meta.IsStatusConditionTrue(c.Status.Conditions, karpv1.ConditionTypeInitialized) {
					n++
				}
			}
			return n == want && len(cs) == want, nil
		}
	}
	eventually(t, 3*time.Minute, "3 initialized replicas with no pod asking", initialized(3))
	cs, _ := claimsOf(pool)
	for _, c := range cs {
		if got := c.Labels[corev1.LabelInstanceTypeStable]; got != "c5.large" {
			t.Errorf("replica %s is %s, want the pool's cheapest type c5.large", c.Name, got)
		}
	}

	// One pod that fits, one that fits no replica: the second stays pending
	// and the provisioner says so, launching nothing.
	deployment(t, ns, "small", 1, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "500m", memory: "256Mi"})
	deployment(t, ns, "big", 1, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "6", memory: "1Gi"})
	eventually(t, 2*time.Minute, "the small pod running", func() (bool, error) {
		var pods corev1.PodList
		if err := kc.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": "small"}); err != nil || len(pods.Items) != 1 {
			return false, err
		}
		return pods.Items[0].Status.Phase == corev1.PodRunning, nil
	})
	eventually(t, time.Minute, "the provisioner's FailedScheduling event on the big pod", func() (bool, error) {
		var evs corev1.EventList
		if err := kc.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" && e.Source.Component == "nodewright" && e.InvolvedObject.Kind == "Pod" {
				return true, nil
			}
		}
		return false, nil
	})
	if cs, _ := claimsOf(pool); len(cs) != 3 {
		t.Fatalf("a pod that fits no replica led to %d NodeClaims, want 3:%s", len(cs), describeClaims(pool))
	}
	if err := kc.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"}}); err != nil {
		t.Fatal(err)
	}

	// kubectl scale nodepool static --replicas=1, through the scale subresource.
	busy := ""
	eventually(t, time.Minute, "the small pod's node", func() (bool, error) {
		var pods corev1.PodList
		if err := kc.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": "small"}); err != nil || len(pods.Items) != 1 {
			return false, err
		}
		busy = pods.Items[0].Spec.NodeName
		return busy != "", nil
	})
	np := &karpv1.NodePool{}
	if err := kc.Get(ctx, types.NamespacedName{Name: pool}, np); err != nil {
		t.Fatal(err)
	}
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
	if err := kc.SubResource("scale").Update(ctx, np, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("scaling NodePool %s to 1: %v", pool, err)
	}
	eventually(t, 2*time.Minute, "one replica left", func() (bool, error) {
		cs, err := claimsOf(pool)
		return err == nil && len(cs) == 1, err
	})
	cs, _ = claimsOf(pool)
	if cs[0].Status.NodeName != busy {
		t.Fatalf("scale-down kept %s (node %s), want the node running a pod, %s", cs[0].Name, cs[0].Status.NodeName, busy)
	}
	old := cs[0].Name

	// Drift: a new template label replaces the last replica, replacement first.
	rec := recordClaims(pool)
	// The controllers write the NodePool's status meanwhile: patchPool reads
	// again and retries when the update meets a newer copy.
	patchPool(t, pool, func(np *karpv1.NodePool) { np.Spec.Template.Labels = map[string]string{"generation": "2"} })
	eventually(t, 3*time.Minute, "the drifted replica replaced by one with the new label", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil || len(cs) != 1 {
			return false, err
		}
		return cs[0].Name != old && cs[0].Labels["generation"] == "2" &&
			meta.IsStatusConditionTrue(cs[0].Status.Conditions, karpv1.ConditionTypeInitialized), nil
	})
	last := rec.Last()
	seen := rec.Seen()
	cs, _ = claimsOf(pool)
	if len(seen) != 2 {
		t.Errorf("drift saw NodeClaims %v, want the old one and one replacement", seen)
	}
	// The replace command names the replacement on the old claim before
	// creating it, and deletes the old claim only once it initialized.
	if o := last[old]; o.Annotations[planner.DisruptingAnnotation] != string(karpv1.DisruptionReasonDrifted) ||
		o.Annotations[planner.ReplacementsAnnotation] != cs[0].Name {
		t.Errorf("old replica %s was not replaced first: annotations %v, replacement %s", old, o.Annotations, cs[0].Name)
	}
	waitRunning(t, ns, 1, 2*time.Minute)
}

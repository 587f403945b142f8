package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/controller/disruption"
)

// TestWhatDriftsAndWhatDoesNot edits one field of a NodePool at a time and
// reads the verdict on its node's NodeClaim: each template field
// (labels, annotations, taints, startupTaints, nodeClassRef, expireAfter,
// terminationGracePeriod) drifts it by hash, a requirement the node no
// longer meets drifts it by requirements, and weight, limits and the
// disruption block never do. Each edit is undone before the next, and the
// verdict clears. A Drifted budget of 0 keeps the node, so only the verdict
// is looked at, not a replacement.
func TestWhatDriftsAndWhatDoesNot(t *testing.T) {
	t.Parallel()
	const pool, ns = "drift-fields", "e2e-drift-fields"
	nodeClass(t, pool, nil)
	nodeClass(t, pool+"-other", nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}, {Nodes: "100%"}}
	})
	namespace(t, ns)
	deployment(t, ns, "app", 1, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "500m", memory: "256Mi"})
	waitRunning(t, ns, 1, 3*time.Minute)
	var original karpv1.NodePool
	if err := kc.Get(context.Background(), types.NamespacedName{Name: pool}, &original); err != nil {
		t.Fatal(err)
	}
	claims, err := claimsOf(pool)
	if err != nil || len(claims) != 1 {
		t.Fatalf("want one NodeClaim, have %d (%v)", len(claims), err)
	}
	instanceType := claims[0].Labels[corev1.LabelInstanceTypeStable]
	if instanceType == "" {
		t.Fatalf("NodeClaim %s has no instance-type label", claims[0].Name)
	}
	restore := func(np *karpv1.NodePool) { np.Spec = *original.Spec.DeepCopy() }
	if got := driftVerdict(t, pool, restore); got != "" {
		t.Fatalf("the NodePool as created: drift %q, want none", got)
	}

	for _, tc := range []struct {
		name   string
		edit   func(*karpv1.NodePool)
		reason string
	}{
		{"weight, limits and disruption", func(np *karpv1.NodePool) {
			np.Spec.Weight = ptr(int32(7))
			np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("1000")}
			np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("1h")
			np.Spec.Disruption.Budgets = append(np.Spec.Disruption.Budgets, karpv1.Budget{Nodes: "3"})
		}, ""},
		{"template labels", func(np *karpv1.NodePool) { np.Spec.Template.Labels = map[string]string{"team": "a"} }, "NodePoolDrifted"},
		{"template annotations", func(np *karpv1.NodePool) { np.Spec.Template.Annotations = map[string]string{"note": "x"} }, "NodePoolDrifted"},
		{"taints", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectPreferNoSchedule}}
		}, "NodePoolDrifted"},
		{"startupTaints", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "agent-not-ready", Effect: corev1.TaintEffectNoSchedule}}
		}, "NodePoolDrifted"},
		{"nodeClassRef", func(np *karpv1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = pool + "-other" }, "NodePoolDrifted"},
		{"expireAfter", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("1000h")
		}, "NodePoolDrifted"},
		{"terminationGracePeriod", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		}, "NodePoolDrifted"},
		{"a requirement the node no longer meets", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpNotIn, instanceType))
		}, "RequirementsDrifted"},
	} {
		if got := driftVerdict(t, pool, tc.edit); got != tc.reason {
			t.Errorf("%s: drift %q, want %q", tc.name, got, tc.reason)
		}
		if got := driftVerdict(t, pool, restore); got != "" {
			t.Errorf("%s undone: drift %q, want none", tc.name, got)
		}
	}
	if claims, _ := claimsOf(pool); len(claims) != 1 {
		t.Errorf("%d NodeClaims at the end; the Drifted budget of 0 should have kept the one node", len(claims))
	}
}

// driftVerdict edits the NodePool, waits for a disruption loop to judge the
// new generation (the budgets condition carries it), and returns the
// reason of the Drifted condition on the pool's one NodeClaim, "" if none.
func driftVerdict(t *testing.T, pool string, edit func(*karpv1.NodePool)) string {
	t.Helper()
	patchPool(t, pool, edit)
	var np karpv1.NodePool
	if err := kc.Get(context.Background(), types.NamespacedName{Name: pool}, &np); err != nil {
		t.Fatal(err)
	}
	gen := np.Generation
	eventually(t, time.Minute, "a disruption loop to judge the edited NodePool", func() (bool, error) {
		if err := kc.Get(context.Background(), types.NamespacedName{Name: pool}, &np); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(np.Status.Conditions, disruption.BudgetsCondition)
		return c != nil && c.ObservedGeneration >= gen, errorf("generation %d, budgets condition %+v", gen, c)
	})
	claims, err := claimsOf(pool)
	if err != nil || len(claims) != 1 {
		t.Fatalf("want one NodeClaim, have %d (%v)", len(claims), err)
	}
	if c := meta.FindStatusCondition(claims[0].Status.Conditions, karpv1.ConditionTypeDrifted); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	return ""
}

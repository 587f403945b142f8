package e2e

import (
	"context"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// TestOneRefusedNodeClaimDoesNotStallDisruption: an admission policy
// refuses every write to one NodeClaim, which also needs its hash
// restamped (the first write a disruption loop makes). The other
// NodeClaim of the pool is still replaced when the pool drifts: a failed
// write is logged and the loop goes on to the rest.
func TestOneRefusedNodeClaimDoesNotStallDisruption(t *testing.T) {
	t.Parallel()
	const pool, ns, label = "stall", "e2e-stall", "e2e.nodewright.dev/refuse-writes"
	ctx := context.Background()
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.xlarge"))
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
	})
	namespace(t, ns)
	deployment(t, ns, "app", 2, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "3", memory: "1Gi"})
	waitRunning(t, ns, 2, 3*time.Minute)
	claims, err := claimsOf(pool)
	if err != nil || len(claims) != 2 {
		t.Fatalf("want 2 NodeClaims, have %d (%v)", len(claims), err)
	}
	refused, other := claims[0], claims[1]

	// Mark one claim, and make it need a restamp.
	patch := client.MergeFrom(refused.DeepCopy())
	refused.Labels[label] = "true"
	refused.Annotations[karpv1.NodePoolHashVersionAnnotationKey] = "v0"
	if err := kc.Patch(ctx, &refused, patch); err != nil {
		t.Fatal(err)
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-refuse-nodeclaim-writes"},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{karpv1.Group}, APIVersions: []string{"v1"},
						Resources: []string{"nodeclaims", "nodeclaims/status"}},
				}}}},
			Validations: []admissionv1.Validation{{Expression: "false", Message: "the test refuses writes to this NodeClaim"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-refuse-nodeclaim-writes"},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{ObjectSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{label: "true"}}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := kc.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = kc.Delete(context.Background(), binding)
		_ = kc.Delete(context.Background(), policy)
	})
	// The policy takes effect once the API server loaded it: wait until a
	// write to the claim is refused.
	eventually(t, time.Minute, "the admission policy refusing writes", func() (bool, error) {
		var nc karpv1.NodeClaim
		if err := kc.Get(ctx, client.ObjectKeyFromObject(&refused), &nc); err != nil {
			return false, err
		}
		p := client.MergeFrom(nc.DeepCopy())
		nc.Annotations["e2e.nodewright.dev/probe"] = time.Now().String()
		return kc.Patch(ctx, &nc, p) != nil, nil
	})

	// Drift both; the one whose writes succeed is replaced.
	var np karpv1.NodePool
	if err := kc.Get(ctx, client.ObjectKey{Name: pool}, &np); err != nil {
		t.Fatal(err)
	}
	np.Spec.Template.Labels = map[string]string{"generation": "2"}
	if err := kc.Update(ctx, &np); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "the writable NodeClaim replaced despite the refused one", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		replaced, fresh := true, false
		for _, c := range cs {
			if c.Name == other.Name {
				replaced = false
			}
			if c.Labels["generation"] == "2" && meta.IsStatusConditionTrue(c.Status.Conditions, karpv1.ConditionTypeInitialized) {
				fresh = true
			}
		}
		return replaced && fresh, nil
	})
}

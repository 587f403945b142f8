package nodeoverlay

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	"github.com/nodewright/nodewright/internal/testcluster"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

// TestReconcileWritesConditions: against a real API server, a valid overlay
// becomes Ready and one with a zero capacity is not, naming the field.
func TestReconcileWritesConditions(t *testing.T) {
	ctx := context.Background()
	c := &Controller{Client: cluster.Client}
	for name, qty := range map[string]string{"good": "2", "zero": "0"} {
		o := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: karpv1alpha1.NodeOverlaySpec{
			Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
			Capacity:     corev1.ResourceList{"example.com/gpu": resource.MustParse(qty)}}}
		if err := cluster.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating NodeOverlay %s: %v", name, err)
		}
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]metav1.ConditionStatus{"good": metav1.ConditionTrue, "zero": metav1.ConditionFalse} {
		o := &karpv1alpha1.NodeOverlay{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, o); err != nil {
			t.Fatal(err)
		}
		if r := meta.FindStatusCondition(o.Status.Conditions, ConditionReady); r == nil || r.Status != want {
			t.Errorf("NodeOverlay %s Ready = %+v, want %s", name, r, want)
		}
	}
}

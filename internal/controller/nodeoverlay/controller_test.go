package nodeoverlay

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
)

func TestConditions(t *testing.T) {
	p := func(s string) *string { return &s }
	for _, tc := range []struct {
		name  string
		spec  karpv1alpha1.NodeOverlaySpec
		ready metav1.ConditionStatus
		msg   string
	}{
		{"price", karpv1alpha1.NodeOverlaySpec{Price: p("0.25")}, metav1.ConditionTrue, ""},
		{"capacity", karpv1alpha1.NodeOverlaySpec{Capacity: corev1.ResourceList{"example.com/gpu": resource.MustParse("2")}}, metav1.ConditionTrue, ""},
		{"zero capacity", karpv1alpha1.NodeOverlaySpec{Capacity: corev1.ResourceList{"example.com/gpu": resource.MustParse("0")}}, metav1.ConditionFalse, "spec.capacity[example.com/gpu] is 0"},
		{"negative capacity", karpv1alpha1.NodeOverlaySpec{Capacity: corev1.ResourceList{"example.com/gpu": resource.MustParse("-1")}}, metav1.ConditionFalse, "spec.capacity[example.com/gpu] is -1"},
		{"ephemeral storage", karpv1alpha1.NodeOverlaySpec{Capacity: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}}, metav1.ConditionFalse, "may not set ephemeral-storage"},
		{"both prices", karpv1alpha1.NodeOverlaySpec{Price: p("1"), PriceAdjustment: p("+10%")}, metav1.ConditionFalse, "cannot both be set"},
		{"bad price", karpv1alpha1.NodeOverlaySpec{Price: p("cheap")}, metav1.ConditionFalse, "spec.price"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "o", Generation: 2}, Spec: tc.spec}
			conds := Conditions(o)
			ready := meta.FindStatusCondition(conds, ConditionReady)
			valid := meta.FindStatusCondition(conds, ConditionValidationSucceeded)
			if ready == nil || valid == nil || ready.Status != tc.ready || valid.Status != tc.ready {
				t.Fatalf("conditions %+v, want Ready and ValidationSucceeded %s", conds, tc.ready)
			}
			if !strings.Contains(valid.Message, tc.msg) || ready.ObservedGeneration != 2 {
				t.Errorf("ValidationSucceeded %+v, want a message containing %q at generation 2", valid, tc.msg)
			}
		})
	}
}

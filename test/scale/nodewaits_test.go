package scale

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func TestSummarizeWaits(t *testing.T) {
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	notReady := corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute}
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "done", Labels: map[string]string{karpv1.NodeInitializedLabelKey: "true"}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{notReady}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "tainted"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{notReady}},
			Status: corev1.NodeStatus{Conditions: ready}},
		{ObjectMeta: metav1.ObjectMeta{Name: "starting"}},
	}
	want := "2 registered, not initialized: 1 not Ready, 1 node.kubernetes.io/not-ready:NoExecute"
	if got := summarizeWaits(nodes); got != want {
		t.Errorf("summarizeWaits = %q, want %q", got, want)
	}
}

package snapshot

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// TestNominatedProvisionable: a pod whose nominatedNodeName is the node of
// any NodeClaim that nominates it waits for capacity, including the first
// claim of a pod displaced from it and planned onto a second; a node no
// claim nominated it to is kube-scheduler's own nomination (preemption),
// unless that node is gone.
func TestNominatedProvisionable(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	claim := func(name string, uids ...types.UID) *karpv1.NodeClaim {
		return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{NominatedPodsAnnotation: EncodeNominations(uids)}},
			Status: karpv1.NodeClaimStatus{NodeName: name, ProviderID: "kwok://" + name}}
	}
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "kwok://" + name}}
	}
	// p is nominated to first (displaced from it) and then to second.
	nodes := IndexNodes([]*corev1.Node{node("first"), node("second"), node("foreign")})
	ours := NominatedNodes([]*karpv1.NodeClaim{claim("first", "p"), claim("second", "p", "q")}, nodes)
	for _, tc := range []struct {
		uid, nnn string
		want     bool
	}{
		{"p", "", true},
		{"p", "first", true},
		{"p", "second", true},
		{"p", "foreign", false},
		{"q", "first", false},
		{"q", "second", true},
		{"q", "gone", true},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(tc.uid), CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
			Status: corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: tc.nnn,
				Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
		if got := ours.ProvisionableAt(pod, now, 3*time.Second); got != tc.want {
			t.Errorf("pod %s nominated to %q: provisionable %v, want %v", tc.uid, tc.nnn, got, tc.want)
		}
	}
}

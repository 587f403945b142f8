package snapshot

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// TestNominationOutlivesGraceUntilSchedulerTriesPod: after a claim's node
// initialized and the grace passed, a nominated pod kube-scheduler has not
// tried stays held on it; one the scheduler tried and could not place is
// planned again.
func TestNominationOutlivesGraceUntilSchedulerTriesPod(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	pod := func(name string, tried bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(now.Add(-10 * time.Minute))}}
		if tried {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		}
		return p
	}
	untriedPod, triedPod := pod("untried", false), pod("tried", true)
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim", Labels: map[string]string{karpv1.NodePoolLabelKey: "p"},
			Annotations: map[string]string{NominatedPodsAnnotation: EncodeNominations([]types.UID{"untried", "tried"})}},
		Status: karpv1.NodeClaimStatus{Conditions: []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: "True",
			LastTransitionTime: metav1.NewTime(now.Add(-5 * time.Minute))}}},
	}
	res := Build(&Cluster{NodeClaims: []*karpv1.NodeClaim{nc}, Pods: []*corev1.Pod{untriedPod, triedPod}}, PoolTypes{},
		Options{Now: now, NominationGrace: time.Minute, UntriedAfter: 3 * time.Second})
	if len(res.Input.Nodes) != 1 || len(res.Input.Nodes[0].Pods) != 1 || res.Input.Nodes[0].Pods[0].Name != "untried" {
		t.Errorf("held on the claim: %v, want only the untried pod", names(res.Input.Nodes[0].Pods))
	}
	if len(res.Input.Pods) != 1 || res.Input.Pods[0].Name != "tried" {
		t.Errorf("planned again: %v, want only the tried pod", names(res.Input.Pods))
	}
}

func names(ps []*corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

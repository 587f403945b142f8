package nodeclaim

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/testcluster"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

// TestPatchNode writes registration's changes against a real API server: a
// status write in between (a kubelet's) does not refuse it, a taint change
// or a node no longer Ready does, and labels, taints and owner references
// land as meant.
func TestPatchNode(t *testing.T) {
	unregistered := corev1.Taint{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
	cases := []struct {
		name      string
		check     nodeCheck
		meanwhile func(n *corev1.Node) bool // true: a status write
		conflict  bool
	}{
		{"nothing changed", checkTaints, nil, false},
		{"the kubelet wrote the status", checkTaints, func(n *corev1.Node) bool {
			n.Status.Conditions[0].Message = "heartbeat"
			return true
		}, false},
		{"the kubelet wrote the status, Ready checked", checkReady, func(n *corev1.Node) bool {
			n.Status.Conditions[0].Message = "heartbeat"
			return true
		}, false},
		{"a taint added", checkTaints, func(n *corev1.Node) bool {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "agent", Effect: corev1.TaintEffectNoSchedule})
			return false
		}, true},
		{"no longer Ready, Ready checked", checkReady, func(n *corev1.Node) bool {
			n.Status.Conditions[0].Status = corev1.ConditionFalse
			return true
		}, true},
		{"no longer Ready, Ready not checked", checkTaints, func(n *corev1.Node) bool {
			n.Status.Conditions[0].Status = corev1.ConditionFalse
			return true
		}, false},
		{"the kubelet wrote the status, whole node checked", checkAll, func(n *corev1.Node) bool {
			n.Status.Conditions[0].Message = "heartbeat"
			return true
		}, true},
	}
	ctx := context.Background()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "patch-" + string(rune('a'+i)), Labels: map[string]string{corev1.LabelHostname: "x"}},
				Spec:       corev1.NodeSpec{Taints: []corev1.Taint{unregistered}},
			}
			if err := cluster.Client.Create(ctx, node); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cluster.Client.Delete(ctx, node) })
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
			if err := cluster.Client.Status().Update(ctx, node); err != nil {
				t.Fatal(err)
			}
			before := node.DeepCopy() // the controller's cached copy
			if tc.meanwhile != nil {
				other := node.DeepCopy()
				var err error
				if tc.meanwhile(other) {
					err = cluster.Client.Status().Update(ctx, other)
				} else {
					err = cluster.Client.Update(ctx, other)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			after := before.DeepCopy()
			after.Labels[karpv1.NodeRegisteredLabelKey] = "true"
			after.Labels["example.com/x"] = "escaped"
			after.Spec.Taints = []corev1.Taint{{Key: "startup", Effect: corev1.TaintEffectNoSchedule}}
			after.OwnerReferences = []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: "c", UID: "u1"}}
			err := patchNode(ctx, cluster.Client, before, after, tc.check)
			if tc.conflict {
				if !apierrors.IsConflict(err) {
					t.Fatalf("patch: %v, want a conflict", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("patch: %v", err)
			}
			got := &corev1.Node{}
			if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
				t.Fatal(err)
			}
			if got.Labels[karpv1.NodeRegisteredLabelKey] != "true" || got.Labels["example.com/x"] != "escaped" || got.Labels[corev1.LabelHostname] != "x" {
				t.Errorf("labels %v", got.Labels)
			}
			if len(got.Spec.Taints) != 1 || got.Spec.Taints[0].Key != "startup" {
				t.Errorf("taints %v, want only startup", got.Spec.Taints)
			}
			if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "u1" {
				t.Errorf("owner references %v", got.OwnerReferences)
			}
		})
	}
}

package nodeclaim

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/testkube"
)

func TestLiftNotReady(t *testing.T) {
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	notReady := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	noExecute := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	startup := corev1.Taint{Key: "agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name       string
		conditions []corev1.NodeCondition
		taints     []corev1.Taint
		lifted     bool
		want       []corev1.Taint
	}{
		{"ready: the NoSchedule taint goes, others stay", ready, []corev1.Taint{startup, notReadyNoSchedule, noExecute}, true, []corev1.Taint{startup, noExecute}},
		{"ready, no such taint", ready, []corev1.Taint{startup}, false, []corev1.Taint{startup}},
		{"not ready: kept", notReady, []corev1.Taint{notReadyNoSchedule}, false, []corev1.Taint{notReadyNoSchedule}},
		{"no Ready condition yet: kept", nil, []corev1.Taint{notReadyNoSchedule}, false, []corev1.Taint{notReadyNoSchedule}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{Spec: corev1.NodeSpec{Taints: tc.taints}, Status: corev1.NodeStatus{Conditions: tc.conditions}}
			if got := liftNotReady(n); got != tc.lifted {
				t.Errorf("liftNotReady = %v, want %v", got, tc.lifted)
			}
			if !slices.Equal(n.Spec.Taints, tc.want) {
				t.Errorf("taints %v, want %v", n.Spec.Taints, tc.want)
			}
		})
	}
}

// setReadyOnly writes the node's Ready condition and nothing else: the
// not-ready taint kube-apiserver's admission put on it stays, as when
// kube-controller-manager is slow to lift it (it does not run here).
func setReadyOnly(t *testing.T, name string, status corev1.ConditionStatus) {
	t.Helper()
	ctx := context.Background()
	testkube.Eventually(t, 30*time.Second, "node "+name+" Ready "+string(status), func() (bool, error) {
		n := &corev1.Node{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return false, err
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		err := cluster.Client.Status().Update(ctx, n)
		return err == nil, err
	})
}

func nodeTaints(name string) ([]corev1.Taint, error) {
	n := &corev1.Node{}
	err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: name}, n)
	return n.Spec.Taints, err
}

// A Ready node still carrying the not-ready taint is initialized, the taint
// lifted in the same write; a node reporting Ready False keeps it and is not.
func TestReadyNodeLosesStaleNotReadyTaint(t *testing.T) {
	runControllers(t, DefaultOptions())
	createClass(t, "lift", 0)
	np := createPool(t, "lift", "lift", "Never", 0)
	createClaim(t, np, "lift-ready")
	createClaim(t, np, "lift-notready")
	for _, name := range []string{"lift-ready", "lift-notready"} {
		waitClaim(t, name, "registered", func(nc *karpv1.NodeClaim) bool {
			return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeRegistered)
		})
		taints, err := nodeTaints(name)
		if err != nil {
			t.Fatal(err)
		}
		if !hasTaint(taints, notReadyNoSchedule) {
			t.Fatalf("node %s registered without the admission's not-ready taint (%v): the test proves nothing", name, taints)
		}
	}
	setReadyOnly(t, "lift-notready", corev1.ConditionFalse)
	setReadyOnly(t, "lift-ready", corev1.ConditionTrue)

	waitClaim(t, "lift-ready", "initialized", func(nc *karpv1.NodeClaim) bool {
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
	})
	taints, err := nodeTaints("lift-ready")
	if err != nil {
		t.Fatal(err)
	}
	if hasTaint(taints, notReadyNoSchedule) {
		t.Errorf("initialized node lift-ready still has %s:%s: %v", notReadyNoSchedule.Key, notReadyNoSchedule.Effect, taints)
	}

	// The other one, polled for as long as the first took and more, is not
	// initialized and keeps its taint.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		nc := &karpv1.NodeClaim{}
		if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: "lift-notready"}, nc); err != nil {
			t.Fatal(err)
		}
		if meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
			t.Fatal("lift-notready initialized while its node reports Ready False")
		}
		taints, err := nodeTaints("lift-notready")
		if err != nil {
			t.Fatal(err)
		}
		if !hasTaint(taints, notReadyNoSchedule) {
			t.Fatalf("the not-ready taint of lift-notready, whose node reports Ready False, was lifted: %v", taints)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

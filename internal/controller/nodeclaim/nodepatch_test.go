package nodeclaim

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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

// TestPatchClaimStatus writes a claim's status against a real API server:
// a metadata write in between (the provisioner's nominations), a pod
// timestamp or another writer's condition (the disruption loop's) does not
// refuse it; a change to a condition it changes does, and so do a removal
// that moved it and the same condition added by someone else. The status
// lands as meant with the others' writes kept.
func TestPatchClaimStatus(t *testing.T) {
	launched := metav1.Condition{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: metav1.Now()}
	registered := metav1.Condition{Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionTrue, Reason: "Registered", LastTransitionTime: metav1.Now()}
	preview := metav1.Condition{Type: "nodewright.dev/DisruptionPreview", Status: metav1.ConditionFalse, Reason: "Blocked", Message: "3 pending pods are nominated to it", LastTransitionTime: metav1.Now()}
	register := func(nc *karpv1.NodeClaim) {
		nc.Status.NodeName = nc.Name
		meta.SetStatusCondition(&nc.Status.Conditions, registered)
	}
	cases := []struct {
		name string
		// stored are the conditions the claim has when read.
		stored []metav1.Condition
		// meanwhile changes the claim between the read and the write; true:
		// through the status.
		meanwhile func(nc *karpv1.NodeClaim) bool
		// change is the write; registration when nil.
		change   func(nc *karpv1.NodeClaim)
		conflict bool
		want     []string
	}{
		{name: "nothing changed", want: []string{"Launched", "Registered"}},
		{name: "nominations added", meanwhile: func(nc *karpv1.NodeClaim) bool {
			nc.Annotations = map[string]string{"nodewright.dev/nominated-pods": "a,b"}
			return false
		}, want: []string{"Launched", "Registered"}},
		{name: "pod event time stamped", meanwhile: func(nc *karpv1.NodeClaim) bool {
			nc.Status.LastPodEventTime = metav1.Now()
			return true
		}, want: []string{"Launched", "Registered"}},
		{name: "another writer's condition added", meanwhile: func(nc *karpv1.NodeClaim) bool {
			nc.Status.Conditions = append(nc.Status.Conditions, preview)
			return true
		}, want: []string{"Launched", preview.Type, "Registered"}},
		{name: "another writer's condition changed", stored: []metav1.Condition{launched, preview}, meanwhile: func(nc *karpv1.NodeClaim) bool {
			nc.Status.Conditions[1].Message = "2 pending pods are nominated to it"
			return true
		}, want: []string{"Launched", preview.Type, "Registered"}},
		{name: "a condition it changes changed meanwhile", meanwhile: func(nc *karpv1.NodeClaim) bool {
			nc.Status.Conditions[0].Message = "by another"
			return true
		}, change: func(nc *karpv1.NodeClaim) { nc.Status.Conditions[0].Message = "by us" }, conflict: true},
		{name: "a removal moved the condition it changes", stored: []metav1.Condition{preview, launched}, meanwhile: func(nc *karpv1.NodeClaim) bool {
			nc.Status.Conditions = nc.Status.Conditions[1:]
			return true
		}, change: func(nc *karpv1.NodeClaim) { nc.Status.Conditions[1].Message = "by us" }, conflict: true},
		{name: "the same condition added meanwhile", meanwhile: func(nc *karpv1.NodeClaim) bool {
			nc.Status.Conditions = append(nc.Status.Conditions, registered)
			return true
		}, conflict: true},
	}
	ctx := context.Background()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc := bareClaim(t, "status-patch-"+string(rune('a'+i)))
			nc.Status.ProviderID = "kwok://" + nc.Name
			nc.Status.Conditions = []metav1.Condition{launched}
			if tc.stored != nil {
				nc.Status.Conditions = append([]metav1.Condition(nil), tc.stored...)
			}
			if err := cluster.Client.Status().Update(ctx, nc); err != nil {
				t.Fatal(err)
			}
			before := nc.DeepCopy()
			if tc.meanwhile != nil {
				other := nc.DeepCopy()
				if tc.meanwhile(other) {
					if err := cluster.Client.Status().Update(ctx, other); err != nil {
						t.Fatal(err)
					}
				} else if err := cluster.Client.Update(ctx, other); err != nil {
					t.Fatal(err)
				}
			}
			after := before.DeepCopy()
			if tc.change == nil {
				tc.change = register
			}
			tc.change(after)
			got := patchAndRead(t, before, after, tc.conflict)
			if got == nil {
				return
			}
			var types []string
			for _, c := range got.Status.Conditions {
				types = append(types, c.Type)
			}
			if !reflect.DeepEqual(types, tc.want) {
				t.Errorf("conditions %v, want %v", types, tc.want)
			}
			if got.Status.NodeName != nc.Name || got.Status.ProviderID != "kwok://"+nc.Name {
				t.Errorf("status %+v, want nodeName and providerID", got.Status)
			}
			if tc.name == "nominations added" && got.Annotations["nodewright.dev/nominated-pods"] != "a,b" {
				t.Errorf("annotations %v: the nominations were lost", got.Annotations)
			}
			if tc.name == "pod event time stamped" && got.Status.LastPodEventTime.IsZero() {
				t.Errorf("lastPodEventTime was lost")
			}
			if c := meta.FindStatusCondition(got.Status.Conditions, preview.Type); tc.name == "another writer's condition changed" && (c == nil || c.Message != "2 pending pods are nominated to it") {
				t.Errorf("preview %+v: the other writer's change was lost", c)
			}
		})
	}
}

// TestPatchFirstClaimStatus: the launch's first status write is not
// refused for a metadata change made since the claim was read, and still
// is for a status someone else wrote meanwhile.
func TestPatchFirstClaimStatus(t *testing.T) {
	cases := []struct {
		name      string
		meanwhile func(ctx context.Context, nc *karpv1.NodeClaim) error
		conflict  bool
	}{
		{"nothing changed", nil, false},
		{"nominations added", func(ctx context.Context, nc *karpv1.NodeClaim) error {
			nc.Annotations = map[string]string{"nodewright.dev/nominated-pods": "a,b"}
			return cluster.Client.Update(ctx, nc)
		}, false},
		{"status written by another", func(ctx context.Context, nc *karpv1.NodeClaim) error {
			nc.Status.LastPodEventTime = metav1.Now()
			return cluster.Client.Status().Update(ctx, nc)
		}, true},
	}
	ctx := context.Background()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc := bareClaim(t, "first-status-"+string(rune('a'+i)))
			before := nc.DeepCopy()
			if tc.meanwhile != nil {
				if err := tc.meanwhile(ctx, nc.DeepCopy()); err != nil {
					t.Fatal(err)
				}
			}
			after := before.DeepCopy()
			after.Status.ProviderID = "kwok://" + nc.Name
			after.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: metav1.Now()}}
			got := patchAndRead(t, before, after, tc.conflict)
			if got == nil {
				return
			}
			if got.Status.ProviderID != "kwok://"+nc.Name || len(got.Status.Conditions) != 1 {
				t.Errorf("status %+v, want the providerID and one condition", got.Status)
			}
			if tc.name == "nominations added" && got.Annotations["nodewright.dev/nominated-pods"] != "a,b" {
				t.Errorf("annotations %v: the nominations were lost", got.Annotations)
			}
		})
	}
}

// bareClaim creates a NodeClaim with no owner or finalizer, deleted when the test ends.
func bareClaim(t *testing.T, name string) *karpv1.NodeClaim {
	t.Helper()
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodeClaimSpec{NodeClassRef: &karpv1.NodeClassReference{Group: "nodewright.dev", Kind: "KWOKNodeClass", Name: "x"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
				Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large"}}}}}}
	if err := cluster.Client.Create(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), nc) })
	return nc
}

// patchAndRead writes after's status over before's with patchClaimStatus
// and returns the claim as stored; when conflict is wanted, it checks the
// write was refused as one and returns nil.
func patchAndRead(t *testing.T, before, after *karpv1.NodeClaim, conflict bool) *karpv1.NodeClaim {
	t.Helper()
	ctx := context.Background()
	err := patchClaimStatus(ctx, cluster.Client, before, after)
	if conflict {
		if !apierrors.IsConflict(err) {
			t.Fatalf("want a conflict, got %v", err)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	got := &karpv1.NodeClaim{}
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(before), got); err != nil {
		t.Fatal(err)
	}
	return got
}

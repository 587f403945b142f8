// Package roomtest builds the objects that tests of the room check reason
// about: a NodeClaim with its Node, and a pod running on one or waiting for
// kube-scheduler. Both internal/room and the termination controller test
// the same question (is there a ready node for a drained pod?), so they
// share one way of building the answer's inputs.
package roomtest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// Node builds a NodeClaim of NodePool "p" and its registered Node, both of
// alloc. deleting marks the claim deleted a minute before now, and
// initialized marks it initialized an hour before now: the room check
// counts only initialized nodes as room, and moves the pods of deleting
// ones.
func Node(name string, alloc corev1.ResourceList, deleting, initialized bool, now time.Time) (*karpv1.NodeClaim, *corev1.Node) {
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "p"}},
		Status: karpv1.NodeClaimStatus{ProviderID: "kwok://" + name, NodeName: name, Allocatable: alloc}}
	if deleting {
		gone := metav1.NewTime(now.Add(-time.Minute))
		nc.DeletionTimestamp = &gone
	}
	if initialized {
		nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: "True", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		karpv1.NodePoolLabelKey: "p", corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://" + name}, Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc}}
	return nc, n
}

// Pod builds a pod asking for cpu and 1Gi, of priority, created at
// created (the order of kube-scheduler's queue). It runs on node, or waits
// when node is "", marked unschedulable as kube-scheduler marks a pod it
// found no room for.
func Pod(name, node, cpu string, created time.Time, priority int32) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(created)},
		Spec: corev1.PodSpec{NodeName: node, Priority: &priority, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if node == "" {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	}
	return p
}

package snapshot

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func sizedPod(name, cpu, mem string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}}}
}

func TestRoomFor(t *testing.T) {
	node := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods: resource.MustParse("10")}
	tests := []struct {
		name        string
		allocatable corev1.ResourceList
		bound       []*corev1.Pod
		nominated   []*corev1.Pod
		keep        []string
		release     []string
	}{
		{name: "room for all", allocatable: node, bound: []*corev1.Pod{sizedPod("b1", "1", "1Gi")},
			nominated: []*corev1.Pod{sizedPod("n1", "1", "1Gi"), sizedPod("n2", "2", "1Gi")}, keep: []string{"n2", "n1"}},
		{name: "a stranger took the big pod's room; the small one still fits", allocatable: node,
			bound:     []*corev1.Pod{sizedPod("b1", "1", "1Gi"), sizedPod("stranger", "1500m", "1Gi")},
			nominated: []*corev1.Pod{sizedPod("small", "500m", "1Gi"), sizedPod("big", "2", "4Gi")},
			keep:      []string{"small"}, release: []string{"big"}},
		{name: "larger pods keep their room first", allocatable: node, bound: []*corev1.Pod{sizedPod("stranger", "1", "1Gi")},
			nominated: []*corev1.Pod{sizedPod("a", "1", "1Gi"), sizedPod("b", "1", "1Gi"), sizedPod("big", "2", "1Gi")},
			keep:      []string{"big", "a"}, release: []string{"b"}},
		{name: "memory counts too", allocatable: node, bound: []*corev1.Pod{sizedPod("stranger", "100m", "7Gi")},
			nominated: []*corev1.Pod{sizedPod("n", "100m", "2Gi")}, release: []string{"n"}},
		{name: "the pod limit counts", allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("2")},
			bound:     []*corev1.Pod{sizedPod("b1", "100m", "0"), sizedPod("b2", "100m", "0")},
			nominated: []*corev1.Pod{sizedPod("n", "100m", "0")}, release: []string{"n"}},
		{name: "no allocatable known: nothing is judged", nominated: []*corev1.Pod{sizedPod("n", "1", "1Gi")}, keep: []string{"n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep, release := RoomFor(tt.allocatable, tt.bound, tt.nominated)
			if got := names(keep); !slices.Equal(got, tt.keep) {
				t.Errorf("kept %v, want %v", got, tt.keep)
			}
			if got := names(release); !slices.Equal(got, tt.release) {
				t.Errorf("released %v, want %v", got, tt.release)
			}
		})
	}
}

// TestDisplacedPodsArePlannedAgainBeforeTheGrace: with ReleaseDisplaced, on
// an initialized node whose bound pods leave no room for a nominated pod,
// that pod is planned again at once and reported as displaced; the one that
// still fits stays nominated, and nothing is judged on a node that has not
// initialized.
// Without it, every nomination holds for the grace.
func TestDisplacedPodsArePlannedAgainBeforeTheGrace(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	pending := func(p *corev1.Pod) *corev1.Pod {
		p.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		return p
	}
	boundTo := func(p *corev1.Pod, node string) *corev1.Pod {
		p.Spec.NodeName = node
		p.Status.Phase = corev1.PodRunning
		return p
	}
	claim := func(name string, initialized bool, uids ...types.UID) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "p"},
			Annotations: map[string]string{NominatedPodsAnnotation: EncodeNominations(uids)}},
			Status: karpv1.NodeClaimStatus{NodeName: name, ProviderID: "kwok://" + name}}
		if initialized {
			// Initialized seconds ago: well within the grace.
			nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: "True", LastTransitionTime: metav1.NewTime(now.Add(-5 * time.Second))}}
		}
		return nc
	}
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "kwok://" + name},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}}
	}
	cluster := &Cluster{
		NodeClaims: []*karpv1.NodeClaim{claim("ready", true, "big", "small"), claim("starting", false, "waits")},
		Nodes:      []*corev1.Node{node("ready"), node("starting")},
		Pods: []*corev1.Pod{
			boundTo(sizedPod("stranger", "3", "1Gi"), "ready"), boundTo(sizedPod("stranger2", "3500m", "1Gi"), "starting"),
			pending(sizedPod("big", "2", "1Gi")), pending(sizedPod("small", "500m", "1Gi")), pending(sizedPod("waits", "2", "1Gi")),
		},
	}
	off := Build(cluster, PoolTypes{}, Options{Now: now, NominationGrace: time.Minute, UntriedAfter: 3 * time.Second})
	if len(off.Input.Pods) != 0 || off.Nominated != 3 {
		t.Errorf("without ReleaseDisplaced: planned again %v, %d nominated; want none, 3", names(off.Input.Pods), off.Nominated)
	}
	res := Build(cluster, PoolTypes{}, Options{Now: now, NominationGrace: time.Minute, UntriedAfter: 3 * time.Second, ReleaseDisplaced: true})
	held := map[string][]string{}
	for _, n := range res.Input.Nodes {
		for _, p := range n.Pods {
			if p.Spec.NodeName == "" {
				held[n.Name] = append(held[n.Name], p.Name)
			}
		}
	}
	if !slices.Equal(held["ready"], []string{"small"}) || !slices.Equal(held["starting"], []string{"waits"}) {
		t.Errorf("held nominations %v, want ready: [small], starting: [waits]", held)
	}
	if got := names(res.Input.Pods); !slices.Equal(got, []string{"big"}) {
		t.Errorf("planned again: %v, want [big]", got)
	}
	if res.Nominated != 2 {
		t.Errorf("Nominated = %d, want 2", res.Nominated)
	}
	// The released pod is reported as displaced, so that the claim planned
	// for it next can keep its room (DisplacedPodsAnnotation).
	if len(res.Displaced) != 1 || !res.Displaced["big"] {
		t.Errorf("Displaced = %v, want only big", res.Displaced)
	}
	if len(off.Displaced) != 0 {
		t.Errorf("without ReleaseDisplaced: Displaced = %v, want none", off.Displaced)
	}
}

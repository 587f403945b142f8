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

// TestMoveDrainingPlansThePodsADrainWillEvict: with MoveDraining, the pods
// of a node whose NodeClaim is being deleted that the drain will evict are
// planned as pending copies; those that stay with the node are left on it,
// and nothing moves off a node that is not draining.
func TestMoveDrainingPlansThePodsADrainWillEvict(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	gone := metav1.NewTime(now.Add(-time.Minute))
	pod := func(name, node string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}, Spec: corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	claim := func(name string, deleting bool) (*karpv1.NodeClaim, *corev1.Node) {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "p"},
			Finalizers: []string{karpv1.TerminationFinalizer}},
			Status: karpv1.NodeClaimStatus{ProviderID: "kwok://" + name, NodeName: name}}
		if deleting {
			nc.DeletionTimestamp = &gone
		}
		return nc, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "kwok://" + name}}
	}
	drainingClaim, drainingNode := claim("draining", true)
	keptClaim, keptNode := claim("kept", false)
	pods := []*corev1.Pod{
		pod("web", "draining", nil),
		pod("daemon", "draining", func(p *corev1.Pod) {
			ctl := true
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "d", APIVersion: "apps/v1", Controller: &ctl}}
		}),
		pod("held", "draining", func(p *corev1.Pod) { p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"} }),
		pod("ending", "draining", func(p *corev1.Pod) { p.DeletionTimestamp = &gone }),
		pod("tolerates", "draining", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}}
		}),
		pod("other", "kept", nil),
	}
	cluster := &Cluster{NodeClaims: []*karpv1.NodeClaim{drainingClaim, keptClaim}, Nodes: []*corev1.Node{drainingNode, keptNode}, Pods: pods}
	for _, tc := range []struct {
		move             bool
		planned, onDrain []string
	}{
		{move: false, planned: nil, onDrain: []string{"web", "daemon", "held", "ending", "tolerates"}},
		{move: true, planned: []string{"web"}, onDrain: []string{"daemon", "held", "ending", "tolerates"}},
	} {
		res := Build(cluster, PoolTypes{}, Options{Now: now, MoveDraining: tc.move})
		if got := names(res.Input.Pods); !slices.Equal(got, tc.planned) {
			t.Errorf("move=%v: planned %v, want %v", tc.move, got, tc.planned)
		}
		for _, n := range res.Input.Nodes {
			switch n.Name {
			case "draining":
				if got := names(n.Pods); !slices.Equal(got, tc.onDrain) {
					t.Errorf("move=%v: left on the draining node %v, want %v", tc.move, got, tc.onDrain)
				}
			case "kept":
				if got := names(n.Pods); !slices.Equal(got, []string{"other"}) {
					t.Errorf("move=%v: on the kept node %v, want [other]", tc.move, got)
				}
			}
		}
		if tc.move {
			if res.Draining["web"] != "draining" || len(res.Draining) != 1 {
				t.Errorf("Draining = %v, want web on node draining", res.Draining)
			}
			if res.Input.Pods[0].Spec.NodeName != "" || pods[0].Spec.NodeName != "draining" {
				t.Errorf("the planned copy must have no nodeName and the cluster's pod keep its own")
			}
		}
	}
}

// TestNominationHolds: which nominated pods stay held on their NodeClaim and
// which are planned again. A pod whose status.nominatedNodeName is the node
// of the NodeClaim that nominates it (written by the lifecycle controller)
// counts as waiting; one kube-scheduler nominated elsewhere (preemption) is
// neither held nor planned. Past the grace, a pod the scheduler tried is
// planned again (see room_test.go for Options.ReleaseDisplaced).
func TestNominationHolds(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	pod := func(name, nnn string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(now.Add(-30 * time.Minute))},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m")}}}}}}
		p.Status.NominatedNodeName = nnn
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		return p
	}
	boundPod := pod("bound", "")
	boundPod.Spec.NodeName = "node-a"
	for _, tc := range []struct {
		name        string
		initialized time.Duration // ago; 0: not initialized
		pod         *corev1.Pod
		bound       bool // another pod bound to node-a takes the room
		wantHeld    bool
		wantPlanned bool
	}{
		{"own nomination, node starting", 0, pod("p", "node-a"), false, true, false},
		{"own nomination, within grace", 30 * time.Second, pod("p", "node-a"), false, true, false},
		{"own nomination, past grace, tried", 5 * time.Minute, pod("p", "node-a"), false, false, true},
		{"own nomination, room taken but within grace", 30 * time.Second, pod("p", "node-a"), true, true, false},
		{"no nominatedNodeName, node starting", 0, pod("p", ""), false, true, false},
		{"preempting onto another node", 0, pod("p", "node-b"), false, false, false},
		{"nominated to a node that is gone", 0, pod("p", "node-gone"), false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &karpv1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "claim", Labels: map[string]string{karpv1.NodePoolLabelKey: "p"},
					Annotations: map[string]string{NominatedPodsAnnotation: EncodeNominations([]types.UID{"p"})}},
				Status: karpv1.NodeClaimStatus{ProviderID: "kwok://claim", NodeName: "node-a"},
			}
			if tc.initialized > 0 {
				nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: "True",
					LastTransitionTime: metav1.NewTime(now.Add(-tc.initialized))}}
			}
			nodes := []*corev1.Node{
				{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: corev1.NodeSpec{ProviderID: "kwok://claim"},
					Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("10")}}},
				{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}},
			}
			pods := []*corev1.Pod{tc.pod}
			if tc.bound {
				pods = append(pods, boundPod)
			}
			res := Build(&Cluster{NodeClaims: []*karpv1.NodeClaim{nc}, Nodes: nodes, Pods: pods}, PoolTypes{},
				Options{Now: now, NominationGrace: time.Minute})
			var held []*corev1.Pod
			for _, n := range res.Input.Nodes {
				if n.Name == "node-a" {
					for _, q := range n.Pods {
						if q.Name == "p" {
							held = append(held, q)
						}
					}
				}
			}
			if got := len(held) == 1; got != tc.wantHeld {
				t.Errorf("held on the claim: %v, want held %v", names(held), tc.wantHeld)
			}
			if got := len(res.Input.Pods) == 1; got != tc.wantPlanned {
				t.Errorf("planned again: %v, want planned %v", names(res.Input.Pods), tc.wantPlanned)
			}
		})
	}
}

package planner

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
)

// TestReclaimAttritionUsesDrainingRoomBeforeLaunching: a pending pod that
// fits only on a node draining by attrition is planned there, the node is
// named for its taint to come off, and nothing is launched; without such a
// node the plan is left alone.
func TestReclaimAttritionUsesDrainingRoomBeforeLaunching(t *testing.T) {
	node := func(taints ...corev1.Taint) solver.Node {
		return solver.Node{Name: "draining", NodePool: "p", Taints: taints,
			Labels:      map[string]string{corev1.LabelHostname: "draining", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("50")}}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "job", UID: "job"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	pool := solver.NodePool{Name: "p", Requirements: scheduling.Requirements{}, InstanceTypes: catalog}
	for _, tc := range []struct {
		name        string
		taints      []corev1.Taint
		wantClaims  int
		wantReclaim bool
	}{
		{"a draining node is used before a launch", []corev1.Taint{AttritionTaint}, 0, true},
		{"another taint is not lifted", []corev1.Taint{{Key: "other", Effect: corev1.TaintEffectNoSchedule}}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &solver.Input{NodePools: []solver.NodePool{pool}, Nodes: []solver.Node{node(tc.taints...)}, Pods: []*corev1.Pod{pod}}
			plan, reclaimed := reclaimOne(t, in)
			if len(plan.NewClaims) != tc.wantClaims || reclaimed["draining"] != tc.wantReclaim {
				t.Errorf("plan launches %d, reclaimed %v; want %d launches, reclaimed %v", len(plan.NewClaims), reclaimed, tc.wantClaims, tc.wantReclaim)
			}
		})
	}
}

// TestReclaimAttritionOpensTheFullestFirst: of two draining nodes with room
// for a pending job, the one with more pods is opened, and only that one:
// the emptier one is about to go, and a new job would hold it. Nodes with
// more pods still but no room are passed over: they used to use up the
// tries, and then the solver opened whichever node it liked.
func TestReclaimAttritionOpensTheFullestFirst(t *testing.T) {
	job := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: k8stypes.UID(name)},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	}
	node := func(name string, jobs int) solver.Node {
		n := solver.Node{Name: name, NodePool: "p", Taints: []corev1.Taint{AttritionTaint},
			Labels:      map[string]string{corev1.LabelHostname: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("50")}}
		for i := 0; i < jobs; i++ {
			n.Pods = append(n.Pods, job(fmt.Sprintf("%s-%d", name, i), name))
		}
		return n
	}
	in := &solver.Input{NodePools: []solver.NodePool{{Name: "p", Requirements: scheduling.Requirements{}, InstanceTypes: catalog}},
		Nodes: []solver.Node{node("a-emptier", 1), node("b-fuller", 3), node("c-full-0", 8), node("c-full-1", 8), node("c-full-2", 8), node("c-full-3", 8)}, Pods: []*corev1.Pod{job("new", "")}}
	plan, reclaimed := reclaimOne(t, in)
	if len(plan.NewClaims) != 0 || !reclaimed["b-fuller"] || len(reclaimed) != 1 {
		t.Errorf("plan launches %d, reclaimed %v; want nothing launched and only b-fuller opened", len(plan.NewClaims), reclaimed)
	}
}

// TestReclaimAttritionOpensTheNewestOfTheAsFull: of two draining nodes with
// as many jobs and room for a pending one, the one whose newest job started
// last is opened, whatever the names. In CI the tie went by name: a node
// whose jobs all ended within minutes was opened, while its peer kept a job
// started a minute before for its whole length, and the fleet held a node
// more than the load needed.
func TestReclaimAttritionOpensTheNewestOfTheAsFull(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	job := func(name, node string, started time.Duration) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: k8stypes.UID(name),
			CreationTimestamp: metav1.NewTime(now.Add(-started - time.Second))},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
		if node != "" {
			p.Status.StartTime = ptr(metav1.NewTime(now.Add(-started)))
		}
		return p
	}
	node := func(name string, started ...time.Duration) solver.Node {
		n := solver.Node{Name: name, NodePool: "p", Taints: []corev1.Taint{AttritionTaint},
			Labels:      map[string]string{corev1.LabelHostname: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("50")}}
		for i, s := range started {
			n.Pods = append(n.Pods, job(fmt.Sprintf("%s-%d", name, i), name, s))
		}
		return n
	}
	for _, tc := range []struct {
		name  string
		nodes []solver.Node
		want  string
	}{
		{"the newer second in name order", []solver.Node{node("a-old", 9*time.Minute, 5*time.Minute), node("b-new", 9*time.Minute, time.Minute)}, "b-new"},
		{"the newer first in name order", []solver.Node{node("a-new", 9*time.Minute, time.Minute), node("b-old", 9*time.Minute, 5*time.Minute)}, "a-new"},
		{"more jobs still come first", []solver.Node{node("a-new", time.Minute), node("b-fuller", 9*time.Minute, 8*time.Minute)}, "b-fuller"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &solver.Input{NodePools: []solver.NodePool{{Name: "p", Requirements: scheduling.Requirements{}, InstanceTypes: catalog}},
				Nodes: tc.nodes, Pods: []*corev1.Pod{job("new", "", 0)}}
			plan, reclaimed := reclaimOne(t, in)
			if len(plan.NewClaims) != 0 || !reclaimed[tc.want] || len(reclaimed) != 1 {
				t.Errorf("plan launches %d, reclaimed %v; want nothing launched and only %s opened", len(plan.NewClaims), reclaimed, tc.want)
			}
		})
	}
}

// reclaimOne plans in, which must launch one node for its pending pod, and
// returns what ReclaimAttrition makes of that plan.
func reclaimOne(t *testing.T, in *solver.Input) (*solver.Plan, map[string]bool) {
	t.Helper()
	first, err := solver.Solve(in)
	if err != nil || len(first.NewClaims) != 1 {
		t.Fatalf("first plan: %v claims, err %v; want 1 launch", len(first.NewClaims), err)
	}
	plan, reclaimed, err := ReclaimAttrition(in, first)
	if err != nil {
		t.Fatal(err)
	}
	return plan, reclaimed
}

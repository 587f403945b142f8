package simulate

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/internal/manifests"
)

func testNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}}}
}

func testPod(name, node, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
}

// TestPendingPodsBindAsKubeSchedulerWould checks that the engine binds a
// new pod where kube-scheduler's scores put it, the least allocated node,
// not first fit by name, and leaves a pod that fits nowhere pending with
// the scheduler's message.
func TestPendingPodsBindAsKubeSchedulerWould(t *testing.T) {
	set := &manifests.Set{Nodes: []*corev1.Node{testNode("a"), testNode("b")},
		Pods: []*corev1.Pod{testPod("busy", "a", "3")}}
	e, err := New(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fits, huge := testPod("fits", "", "500m"), testPod("huge", "", "8")
	e.addPod(fits, "")
	e.addPod(huge, "")
	e.scheduleLoop()
	if fits.Spec.NodeName != "b" {
		t.Errorf("bound to %q, want b, the least allocated", fits.Spec.NodeName)
	}
	if huge.Spec.NodeName != "" {
		t.Fatalf("huge bound to %q", huge.Spec.NodeName)
	}
	if msg := huge.Status.Conditions[0].Message; msg != "0/2 nodes are available: 2 Insufficient cpu." {
		t.Errorf("message %q", msg)
	}
}

// TestAttritionShrinksTheRunnerFleet is issue 21's case: with
// kube-scheduler's scoring the trickle of CI runners spreads over the
// under-used nodes of the morning peak and keeps every one alive, unless
// they drain by attrition.
func TestAttritionShrinksTheRunnerFleet(t *testing.T) {
	base := "../../examples/ci-runners/"
	tl, err := os.ReadFile(base + "timeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plain := simulateFiles(t, string(tl), base+"common", base+"plain")
	attrition := simulateFiles(t, string(tl), base+"common", base+"attrition")
	if attrition.Cost >= plain.Cost*0.8 {
		t.Errorf("attrition costs $%.2f against $%.2f without; want at least 20%% less", attrition.Cost, plain.Cost)
	}
}

// TestPodsFollowTheirVolumesZone checks that a pod whose claim is bound to
// a zonal volume is bound in that zone, though another node is emptier.
func TestPodsFollowTheirVolumesZone(t *testing.T) {
	a, b := testNode("a"), testNode("b")
	a.Labels[corev1.LabelTopologyZone], b.Labels[corev1.LabelTopologyZone] = "zone-a", "zone-b"
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b"}}}}}}}}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv"}}
	set := &manifests.Set{Nodes: []*corev1.Node{a, b}, Pods: []*corev1.Pod{testPod("busy", "b", "3")},
		PVs: []*corev1.PersistentVolume{pv}, PVCs: []*corev1.PersistentVolumeClaim{pvc}}
	e, err := New(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := testPod("db", "", "500m")
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	e.addPod(p, "")
	e.scheduleLoop()
	if p.Spec.NodeName != "b" {
		t.Errorf("bound to %q, want b, in the volume's zone", p.Spec.NodeName)
	}
}

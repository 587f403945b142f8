package solver_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
	"github.com/nodewright/nodewright/internal/workload"
)

func r5a8xlarge() *instancetype.InstanceType {
	offerings := instancetype.Offerings{{Zone: "us-east-1a", CapacityType: "on-demand", Price: 1.808, Available: true}}
	return &instancetype.InstanceType{
		Name:         "r5a.8xlarge",
		Requirements: workload.Requirements("r5a.8xlarge", "amd64", offerings),
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("32"),
			corev1.ResourceMemory: resource.MustParse("262144Mi"),
			corev1.ResourcePods:   resource.MustParse("234"),
		},
		Overhead: instancetype.Overhead{
			VMMemoryPercent:   instancetype.DefaultVMMemoryOverheadPercent,
			KubeReserved:      instancetype.KubeReserved(32, 234),
			EvictionThreshold: instancetype.DefaultEvictionThreshold(),
		},
		Offerings: offerings,
	}
}

func pod(name string, requests corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}}}},
	}
}

// TestExplainShowsAllocatableArithmetic is the case users report: a 240Gi pod
// never fits an r5a.8xlarge, because 7.5% of its memory is assumed lost to the
// hypervisor. The reason shows the arithmetic; a NodeOverlay that states the
// machine's real memory makes the pod fit.
func TestExplainShowsAllocatableArithmetic(t *testing.T) {
	big := pod("big", corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("240Gi")})
	np := solver.NodePool{
		Name:          "memory",
		Requirements:  scheduling.NewRequirements(scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "r5a.8xlarge")),
		InstanceTypes: []*instancetype.InstanceType{r5a8xlarge()},
	}
	plan, err := solver.Solve(&solver.Input{NodePools: []solver.NodePool{np}, Pods: []*corev1.Pod{big}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Unschedulable) != 1 || len(plan.NewClaims) != 0 {
		t.Fatalf("want the pod unschedulable, got %d claims, %d unschedulable", len(plan.NewClaims), len(plan.Unschedulable))
	}
	why := plan.Unschedulable[0].Reason.String()
	want := "r5a.8xlarge: memory: 262144Mi - 19661Mi (7.5%) - 2829Mi kube-reserved - 100Mi eviction = 239554Mi < 245760Mi"
	if !strings.Contains(why, want) {
		t.Errorf("reason does not show the arithmetic\n got: %s\nwant: %s", why, want)
	}
	t.Log(why)

	overlay, err := instancetype.CompileOverlay(&karpv1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "r5a-real-memory"},
		Spec: karpv1alpha1.NodeOverlaySpec{
			Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"r5a.8xlarge"}}},
			Capacity:     corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Gi")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	np.InstanceTypes = instancetype.ApplyOverlays(np.InstanceTypes, []instancetype.Overlay{overlay}, map[string]string{"karpenter.sh/nodepool": np.Name})
	plan, err = solver.Solve(&solver.Input{NodePools: []solver.NodePool{np}, Pods: []*corev1.Pod{big}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Unschedulable) != 0 || len(plan.NewClaims) != 1 || plan.NewClaims[0].InstanceTypes[0].Name != "r5a.8xlarge" {
		t.Fatalf("with the overlay the pod should get an r5a.8xlarge; got %d claims, unschedulable %v", len(plan.NewClaims), plan.Unschedulable)
	}
}

// TestExplainPodReportsFittingTypes: ExplainPod gives the arithmetic of the
// tightest resource for a type that fits as well as for one that does not,
// split into the pod's and the DaemonSets' share.
func TestExplainPodReportsFittingTypes(t *testing.T) {
	small := pod("small", corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("200Gi"), corev1.ResourceCPU: resource.MustParse("1")})
	big := pod("big", corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("240Gi")})
	np := solver.NodePool{
		Name:          "memory",
		Requirements:  scheduling.NewRequirements(scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "r5a.8xlarge")),
		InstanceTypes: []*instancetype.InstanceType{r5a8xlarge()},
	}
	cases := []struct {
		name     string
		pod      *corev1.Pod
		fits     bool
		resource corev1.ResourceName
		needed   string
	}{
		{"fits: memory is the tightest", small, true, corev1.ResourceMemory, "200Gi"},
		{"too big", big, false, corev1.ResourceMemory, "240Gi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := solver.ExplainPod(&solver.Input{NodePools: []solver.NodePool{np}, Pods: []*corev1.Pod{big, small}}, tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.NodePools) != 1 || len(r.NodePools[0].InstanceTypes) != 1 {
				t.Fatalf("want one pool with one type, got %+v", r.NodePools)
			}
			tr := r.NodePools[0].InstanceTypes[0]
			if tr.Fits != tc.fits || tr.Resource != tc.resource || tr.Arithmetic == nil {
				t.Fatalf("got fits=%v resource=%q arithmetic=%v, want fits=%v resource=%q", tr.Fits, tr.Resource, tr.Arithmetic, tc.fits, tc.resource)
			}
			if tr.Pod.Cmp(resource.MustParse(tc.needed)) != 0 || tr.Needed.Cmp(tr.Pod) != 0 || !tr.DaemonSets.IsZero() {
				t.Errorf("pod %s, needed %s, DaemonSets %s; want pod = needed = %s and no DaemonSets", tr.Pod.String(), tr.Needed.String(), tr.DaemonSets.String(), tc.needed)
			}
			if r.Summary != "" {
				t.Errorf("summary %q: ExplainPod leaves placement to Solve", r.Summary)
			}
		})
	}
}

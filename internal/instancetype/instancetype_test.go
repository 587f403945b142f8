package instancetype

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// r5a8xlarge is the instance type of the allocatable example users report.
func r5a8xlarge() *InstanceType {
	return &InstanceType{
		Name:         "r5a.8xlarge",
		Requirements: scheduling.NewRequirements(scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "r5a.8xlarge")),
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("32"),
			corev1.ResourceMemory: resource.MustParse("262144Mi"),
			corev1.ResourcePods:   resource.MustParse("234"),
		},
		Overhead: Overhead{
			VMMemoryPercent:   DefaultVMMemoryOverheadPercent,
			KubeReserved:      KubeReserved(32, 234),
			EvictionThreshold: DefaultEvictionThreshold(),
		},
		Offerings: Offerings{{Zone: "us-east-1a", CapacityType: "on-demand", Price: 1.808, Available: true}},
	}
}

func TestAllocatableArithmetic(t *testing.T) {
	cases := []struct {
		name     string
		it       *InstanceType
		resource corev1.ResourceName
		want     string
	}{
		{"memory with VM overhead", r5a8xlarge(), corev1.ResourceMemory,
			"262144Mi - 19661Mi (7.5%) - 2829Mi kube-reserved - 100Mi eviction = 239554Mi"},
		{"cpu", r5a8xlarge(), corev1.ResourceCPU, "32 - 150m kube-reserved = 31850m"},
		{"pods", r5a8xlarge(), corev1.ResourcePods, "234 = 234"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.it.Arithmetic(tc.resource).String(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestKubeReservedMatchesEKSFormula(t *testing.T) {
	cases := []struct {
		cores, pods int64
		cpu, mem    string
	}{
		{1, 4, "60m", "299Mi"},
		{2, 29, "70m", "574Mi"},
		{4, 58, "80m", "893Mi"},
		{32, 234, "150m", "2829Mi"},
		{96, 737, "310m", "8362Mi"},
	}
	for _, tc := range cases {
		got := KubeReserved(tc.cores, tc.pods)
		if c := got[corev1.ResourceCPU]; c.Cmp(resource.MustParse(tc.cpu)) != 0 {
			t.Errorf("%d cores: cpu %s, want %s", tc.cores, c.String(), tc.cpu)
		}
		if m := got[corev1.ResourceMemory]; m.Cmp(resource.MustParse(tc.mem)) != 0 {
			t.Errorf("%d pods: memory %s, want %s", tc.pods, m.String(), tc.mem)
		}
	}
}

func TestOverlayRealMemoryDropsVMEstimate(t *testing.T) {
	o, err := CompileOverlay(&karpv1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "real-memory"},
		Spec: karpv1alpha1.NodeOverlaySpec{
			Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"r5a.8xlarge"}}},
			Capacity:     corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Gi")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	its := ApplyOverlays([]*InstanceType{r5a8xlarge()}, []Overlay{o}, map[string]string{"karpenter.sh/nodepool": "default"})
	got := its[0].Arithmetic(corev1.ResourceMemory).String()
	want := "262144Mi (NodeOverlay real-memory) - 2829Mi kube-reserved - 100Mi eviction = 259215Mi"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestOverlayPrecedenceAndPrices(t *testing.T) {
	base := func() []*InstanceType {
		it := r5a8xlarge()
		it.Offerings = Offerings{
			{Zone: "a", CapacityType: "on-demand", Price: 2, Available: true},
			{Zone: "a", CapacityType: "spot", Price: 1, Available: true},
		}
		return []*InstanceType{it}
	}
	p := func(s string) *string { return &s }
	w := func(i int32) *int32 { return &i }
	mk := func(name string, weight *int32, price, adj *string, reqs ...corev1.NodeSelectorRequirement) Overlay {
		o, err := CompileOverlay(&karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: karpv1alpha1.NodeOverlaySpec{Requirements: reqs, Price: price, PriceAdjustment: adj, Weight: weight}})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	spot := corev1.NodeSelectorRequirement{Key: CapacityTypeLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}}
	other := corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}
	cases := []struct {
		name     string
		overlays []Overlay
		want     [2]float64 // on-demand, spot
	}{
		{"none", nil, [2]float64{2, 1}},
		{"percent down", []Overlay{mk("a", nil, nil, p("-50%"))}, [2]float64{1, 0.5}},
		{"absolute on spot only", []Overlay{mk("a", nil, p("0.25"), nil, spot)}, [2]float64{2, 0.25}},
		{"heavier wins", []Overlay{mk("a", w(1), p("5"), nil), mk("b", w(10), p("3"), nil)}, [2]float64{3, 3}},
		{"same weight: alphabetical", []Overlay{mk("b", nil, p("5"), nil), mk("a", nil, p("4"), nil)}, [2]float64{4, 4}},
		{"other type untouched", []Overlay{mk("a", nil, p("9"), nil, other)}, [2]float64{2, 1}},
		{"fixed adjustment floors at zero", []Overlay{mk("a", nil, nil, p("-5"))}, [2]float64{0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			out := ApplyOverlays(in, tc.overlays, nil)
			got := [2]float64{out[0].Offerings[0].Price, out[0].Offerings[1].Price}
			if got != tc.want {
				t.Errorf("prices %v, want %v", got, tc.want)
			}
			if in[0].Offerings[0].Price != 2 {
				t.Error("ApplyOverlays modified its input")
			}
		})
	}
}

func TestCompileOverlayRefusesBadInput(t *testing.T) {
	p := func(s string) *string { return &s }
	cases := map[string]karpv1alpha1.NodeOverlaySpec{
		"both price and adjustment": {Price: p("1"), PriceAdjustment: p("+1")},
		"unsigned adjustment":       {PriceAdjustment: p("10%")},
		"price not a number":        {Price: p("cheap")},
		"ephemeral-storage":         {Capacity: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}},
	}
	for name, spec := range cases {
		if _, err := CompileOverlay(&karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: spec}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

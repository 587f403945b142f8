package kwok

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// overlayView is a TypeView of fixed overlays, as the controller's view of
// NodeOverlays is.
func overlayView(overlays ...instancetype.Overlay) cloudprovider.TypeView {
	return func(_ context.Context, claim *karpv1.NodeClaim, its []*instancetype.InstanceType) []*instancetype.InstanceType {
		return instancetype.ApplyOverlays(its, overlays, claim.Labels)
	}
}

// A NodeOverlay that states an r5a.8xlarge's real memory lets the solver
// plan a 240Gi pod onto one; Create must launch it rather than refuse the
// claim as the bare catalog would (the claim was deleted and planned again
// every 2 s, and the pod never ran). The machine is still the catalog's.
func TestCreateJudgesFitThroughTheTypeView(t *testing.T) {
	realMemory := instancetype.Overlay{Name: "real-memory",
		Requirements: scheduling.NewRequirements(scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "r5a.8xlarge")),
		Capacity:     corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Gi")}}
	cases := []struct {
		name string
		view cloudprovider.TypeView
		want string // instance type launched; "" for insufficient capacity
	}{
		{name: "no view: the catalog's estimate is too small", want: ""},
		{name: "an overlay states the real memory", view: overlayView(realMemory), want: "r5a.8xlarge"},
		{name: "an overlay for another type", view: overlayView(instancetype.Overlay{Name: "other",
			Requirements: scheduling.NewRequirements(scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "r5.8xlarge")),
			Capacity:     corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Gi")}}), want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, ProviderOptions{})
			if tc.view != nil {
				e.p.SetTypeView(tc.view)
			}
			claim := e.claim(e.nodeClass(nil), req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "r5a.8xlarge"),
				req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand"))
			claim.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("240Gi")}
			out, err := e.p.Create(e.ctx, claim)
			if tc.want == "" {
				var ice *cloudprovider.InsufficientCapacityError
				if !errors.As(err, &ice) {
					t.Fatalf("Create = %v, want an insufficient capacity error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			if got := out.Labels[corev1.LabelInstanceTypeStable]; got != tc.want {
				t.Errorf("launched %s, want %s", got, tc.want)
			}
			// The overlay is the user's word to the solver, not the machine:
			// the node has what the catalog's machine has.
			catalogType := e.p.byName[tc.want]
			wantCap, _ := e.p.nodeResources(catalogType)
			node := e.mustNode(claim.Name)
			if got, want := node.Status.Capacity[corev1.ResourceMemory], wantCap[corev1.ResourceMemory]; got.Cmp(want) != 0 {
				t.Errorf("node memory %s, want the catalog machine's %s", got.String(), want.String())
			}
		})
	}
}

// An overlay's price steers Create to the offering the solver found
// cheapest.
func TestCreateUsesTheViewsPrices(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	free := 0.0
	e.p.SetTypeView(overlayView(instancetype.Overlay{Name: "reserved",
		Requirements: scheduling.NewRequirements(scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge")),
		Price:        &free}))
	claim := e.claim(e.nodeClass(nil), req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large", "m5.xlarge"),
		req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand"))
	out, err := e.p.Create(e.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Labels[corev1.LabelInstanceTypeStable]; got != "m5.xlarge" {
		t.Errorf("launched %s, want m5.xlarge, free by the overlay", got)
	}
}

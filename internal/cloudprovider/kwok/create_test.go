package kwok

import (
	"cmp"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/catalog"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/instancetype"
)

// cheapest is the test's own answer to "which offering should Create pick":
// a plain scan of the built-in catalog, ties broken by name, zone and
// capacity type.
func cheapest(t *testing.T, skip map[cloudprovider.Offering]bool, allow func(ct catalog.Type, o catalog.Offering) bool) cloudprovider.Offering {
	t.Helper()
	var best cloudprovider.Offering
	bestPrice := -1.0
	for _, ct := range BuiltinCatalog().InstanceTypes {
		for _, o := range ct.Offerings {
			id := cloudprovider.Offering{InstanceType: ct.Name, Zone: o.Zone, CapacityType: o.CapacityType}
			if skip[id] || !allow(ct, o) {
				continue
			}
			c := cmp.Or(cmp.Compare(o.Price, bestPrice), strings.Compare(id.String(), best.String()))
			if bestPrice < 0 || c < 0 {
				best, bestPrice = id, o.Price
			}
		}
	}
	if bestPrice < 0 {
		t.Fatal("no offering allowed")
	}
	return best
}

func launchedOffering(claim *karpv1.NodeClaim) cloudprovider.Offering {
	return cloudprovider.Offering{
		InstanceType: claim.Labels[corev1.LabelInstanceTypeStable],
		Zone:         claim.Labels[corev1.LabelTopologyZone],
		CapacityType: claim.Labels[karpv1.CapacityTypeLabelKey],
	}
}

func TestCreatePicksCheapestAllowedOffering(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	class := e.nodeClass(nil)
	its := Build(BuiltinCatalog(), Options{VMMemoryOverheadPercent: instancetype.DefaultVMMemoryOverheadPercent})
	allocatable := map[string]corev1.ResourceList{}
	for _, it := range its {
		allocatable[it.Name] = it.Allocatable()
	}
	cases := []struct {
		name     string
		reqs     []karpv1.NodeSelectorRequirementWithMinValues
		requests corev1.ResourceList
		allow    func(catalog.Type, catalog.Offering) bool
	}{
		{name: "anything", allow: func(catalog.Type, catalog.Offering) bool { return true }},
		{name: "zone",
			reqs:  []karpv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-c")},
			allow: func(_ catalog.Type, o catalog.Offering) bool { return o.Zone == "zone-c" }},
		{name: "on-demand",
			reqs:  []karpv1.NodeSelectorRequirementWithMinValues{req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand")},
			allow: func(_ catalog.Type, o catalog.Offering) bool { return o.CapacityType == "on-demand" }},
		{name: "instance types",
			reqs:  []karpv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge", "r5.large")},
			allow: func(ct catalog.Type, _ catalog.Offering) bool { return ct.Name == "m5.xlarge" || ct.Name == "r5.large" }},
		{name: "amd64 spot not in zone-a",
			reqs: []karpv1.NodeSelectorRequirementWithMinValues{
				req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
				req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot"),
				req(corev1.LabelTopologyZone, corev1.NodeSelectorOpNotIn, "zone-a")},
			allow: func(ct catalog.Type, o catalog.Offering) bool {
				return ct.Arch == "amd64" && o.CapacityType == "spot" && o.Zone != "zone-a"
			}},
		{name: "kwok label with Gte",
			reqs:  []karpv1.NodeSelectorRequirementWithMinValues{req(LabelInstanceCPU, karpv1.NodeSelectorOpGte, "16")},
			allow: func(ct catalog.Type, _ catalog.Offering) bool { return ct.CPU >= 16 }},
		{name: "family",
			reqs:  []karpv1.NodeSelectorRequirementWithMinValues{req(LabelInstanceFamily, corev1.NodeSelectorOpIn, "r5")},
			allow: func(ct catalog.Type, _ catalog.Offering) bool { return ct.Family == "r5" }},
		{name: "requests",
			requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("14Gi")},
			allow: func(ct catalog.Type, _ catalog.Offering) bool {
				a := allocatable[ct.Name]
				return a.Cpu().Cmp(resource.MustParse("3")) >= 0 && a.Memory().Cmp(resource.MustParse("14Gi")) >= 0
			}},
		{name: "GPU",
			requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")},
			allow:    func(ct catalog.Type, _ catalog.Offering) bool { return ct.GPUs >= 2 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := e.claim(class, tc.reqs...)
			claim.Spec.Resources.Requests = tc.requests
			out, err := e.p.Create(e.ctx, claim)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := launchedOffering(out), cheapest(t, nil, tc.allow); got != want {
				t.Errorf("launched %s, want %s", got, want)
			}
		})
	}
}

// TestCreateReturnsLaunchedClaim checks what the caller saves: labels,
// annotations and status, on a copy that leaves the input alone.
func TestCreateReturnsLaunchedClaim(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	claim := e.claim(e.nodeClass(nil), req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m6g.large"),
		req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b"), req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand"))
	before := claim.DeepCopy()
	out, err := e.p.Create(e.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(claim, before) {
		t.Error("Create modified its argument")
	}
	wantLabels := map[string]string{
		karpv1.NodePoolLabelKey:        "pool",
		corev1.LabelInstanceTypeStable: "m6g.large", corev1.LabelTopologyZone: "zone-b", karpv1.CapacityTypeLabelKey: "on-demand",
		corev1.LabelArchStable: "arm64", corev1.LabelOSStable: "linux",
		LabelInstanceFamily: "m6g", LabelInstanceSize: "large", LabelInstanceCPU: "2", LabelInstanceMemory: "8192", LabelInstanceGPU: "0",
	}
	if !reflect.DeepEqual(out.Labels, wantLabels) {
		t.Errorf("labels\n got %v\nwant %v", out.Labels, wantLabels)
	}
	if got := out.Annotations[LaunchedAtAnnotation]; got != epoch.Format(time.RFC3339) {
		t.Errorf("%s = %q", LaunchedAtAnnotation, got)
	}
	if got := out.Annotations[RegistrationDelayAnnotation]; got != "0s" {
		t.Errorf("%s = %q", RegistrationDelayAnnotation, got)
	}
	if out.Status.ProviderID != "kwok://"+claim.Name || out.Status.ImageID != "img-1" {
		t.Errorf("providerID %q imageID %q", out.Status.ProviderID, out.Status.ImageID)
	}
	node := e.mustNode(claim.Name)
	if !equalResources(out.Status.Capacity, node.Status.Capacity) || !equalResources(out.Status.Allocatable, node.Status.Allocatable) {
		t.Errorf("status capacity %v allocatable %v, Node has %v and %v", out.Status.Capacity, out.Status.Allocatable, node.Status.Capacity, node.Status.Allocatable)
	}
}

func TestCreateRefusesUnusableNodeClass(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	cases := []struct {
		name string
		ref  karpv1.NodeClassReference
		want string
	}{
		{"missing", karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: "no-such-class"}, "does not exist"},
		{"wrong kind", karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}, "needs a KWOKNodeClass"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := e.claim("unused")
			claim.Spec.NodeClassRef = &tc.ref
			_, err := e.p.Create(e.ctx, claim)
			var nr *cloudprovider.NodeClassNotReadyError
			if !errors.As(err, &nr) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a NodeClassNotReadyError saying %q", err, tc.want)
			}
			if e.node(claim.Name) != nil {
				t.Error("a Node was created")
			}
		})
	}
}

func TestInsufficientCapacityFallsBackWithinCreate(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	onlyM5 := func(ct catalog.Type, _ catalog.Offering) bool { return ct.Family == "m5" }
	first := cheapest(t, nil, onlyM5)
	second := cheapest(t, map[cloudprovider.Offering]bool{first: true}, onlyM5)
	class := e.nodeClass(&kwokv1alpha1.KWOKFaults{InsufficientCapacity: []kwokv1alpha1.KWOKOfferingSelector{
		{InstanceType: first.InstanceType, Zone: first.Zone, CapacityType: first.CapacityType}}})

	out, err := e.p.Create(e.ctx, e.claim(class, req(LabelInstanceFamily, corev1.NodeSelectorOpIn, "m5")))
	if err != nil {
		t.Fatal(err)
	}
	if got := launchedOffering(out); got != second {
		t.Fatalf("launched %s, want the next cheapest %s after %s ran short", got, second, first)
	}
	if avail := availability(t, e.p, first); avail {
		t.Errorf("%s still available right after running short", first)
	}
	if avail := availability(t, e.p, second); !avail {
		t.Errorf("%s unavailable, but it launched", second)
	}
	e.clock.Step(InsufficientCapacityTTL - time.Second)
	if availability(t, e.p, first) {
		t.Errorf("%s available again before the TTL", first)
	}
	e.clock.Step(time.Second)
	if !availability(t, e.p, first) {
		t.Errorf("%s still unavailable after the TTL", first)
	}
}

func TestInsufficientCapacityEverywhere(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	class := e.nodeClass(&kwokv1alpha1.KWOKFaults{InsufficientCapacity: []kwokv1alpha1.KWOKOfferingSelector{{}}})
	claim := e.claim(class, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"))
	_, err := e.p.Create(e.ctx, claim)
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) {
		t.Fatalf("error %v, want InsufficientCapacityError", err)
	}
	var want []cloudprovider.Offering
	skip := map[cloudprovider.Offering]bool{}
	for range 6 {
		o := cheapest(t, skip, func(ct catalog.Type, _ catalog.Offering) bool { return ct.Name == "m5.large" })
		want, skip[o] = append(want, o), true
	}
	if ice.NodeClaim != claim.Name || !reflect.DeepEqual(ice.Tried, want) {
		t.Errorf("error for %s tried %v, want %v in price order", ice.NodeClaim, ice.Tried, want)
	}
	for _, o := range want {
		if availability(t, e.p, o) {
			t.Errorf("%s available after running short", o)
		}
	}
	// Within the TTL nothing is left to try.
	_, err = e.p.Create(e.ctx, claim)
	if !errors.As(err, &ice) || len(ice.Tried) != 0 || !strings.Contains(err.Error(), "no allowed offering is available") {
		t.Errorf("second Create: %v, want InsufficientCapacityError with nothing tried", err)
	}
	if e.node(claim.Name) != nil {
		t.Error("a Node was created")
	}
}

// availability reports whether InstanceTypes lists o as available.
func availability(t *testing.T, p *Provider, o cloudprovider.Offering) bool {
	t.Helper()
	its, err := p.InstanceTypes(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		for _, off := range it.Offerings {
			if it.Name == o.InstanceType && off.Zone == o.Zone && off.CapacityType == o.CapacityType {
				return off.Available
			}
		}
	}
	t.Fatalf("offering %s not listed", o)
	return false
}

func TestLaunchErrorsFailTheFirstLaunches(t *testing.T) {
	e := newEnv(t, ProviderOptions{DefaultFaults: kwokv1alpha1.KWOKFaults{LaunchErrors: int32p(1)}})
	failing := e.nodeClass(&kwokv1alpha1.KWOKFaults{LaunchErrors: int32p(2)})
	for i := 1; i <= 2; i++ {
		claim := e.claim(failing)
		_, err := e.p.Create(e.ctx, claim)
		if err == nil || cloudprovider.IsInsufficientCapacity(err) || !strings.Contains(err.Error(), "injected launch error") {
			t.Fatalf("launch %d: error %v, want an injected transient error", i, err)
		}
		if e.node(claim.Name) != nil {
			t.Fatalf("launch %d created a Node", i)
		}
	}
	if _, err := e.p.Create(e.ctx, e.claim(failing)); err != nil {
		t.Fatalf("third launch: %v", err)
	}

	// The default applies to a class that says nothing, and is counted apart.
	silent := e.nodeClass(nil)
	if _, err := e.p.Create(e.ctx, e.claim(silent)); err == nil {
		t.Error("the default launchErrors: 1 did not fail the first launch of a silent class")
	}
	if _, err := e.p.Create(e.ctx, e.claim(silent)); err != nil {
		t.Errorf("second launch of the silent class: %v", err)
	}
	if _, err := e.p.Create(e.ctx, e.claim(e.nodeClass(&kwokv1alpha1.KWOKFaults{LaunchErrors: int32p(0)}))); err != nil {
		t.Errorf("a class with launchErrors: 0 failed: %v", err)
	}
}

// TestCreateAgainFindsTheNode covers a controller that crashed after the
// Node was created but before it saved Create's result.
func TestCreateAgainFindsTheNode(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	class := e.nodeClass(nil)
	claim := e.claim(class, req(LabelInstanceFamily, corev1.NodeSelectorOpIn, "r5"))
	first, err := e.p.Create(e.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Minute)
	again, err := e.restart().Create(e.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Labels, first.Labels) || !reflect.DeepEqual(again.Annotations, first.Annotations) ||
		again.Status.ProviderID != first.Status.ProviderID || again.Status.ImageID != first.Status.ImageID ||
		!equalResources(again.Status.Capacity, first.Status.Capacity) || !equalResources(again.Status.Allocatable, first.Status.Allocatable) {
		t.Errorf("second Create returned\n%+v %+v\nfirst returned\n%+v %+v", again.ObjectMeta, again.Status, first.ObjectMeta, first.Status)
	}

	// A Node of that name that is not this claim's is not taken for it.
	other := e.claim(class)
	foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: other.Name}}
	if err := e.c.Create(e.ctx, foreign); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.Create(e.ctx, other); err == nil || !strings.Contains(err.Error(), "is not the kwok instance") {
		t.Errorf("Create over a foreign Node: %v", err)
	}
}

func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if r, ok := b[k]; !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}

// A NodePool whose KWOKNodeClass does not exist gets no instance types, so
// it launches nothing and cannot take pods from the NodePools that work.
func TestInstanceTypesNeedTheNodeClass(t *testing.T) {
	p, err := New(cluster.Client, ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	np := &karpv1.NodePool{}
	np.Name = "points-nowhere"
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "nodewright.dev", Kind: "KWOKNodeClass", Name: "no-such-class"}
	_, err = p.InstanceTypes(t.Context(), np)
	var notReady *cloudprovider.NodeClassNotReadyError
	if !errors.As(err, &notReady) {
		t.Fatalf("want a NodeClassNotReadyError for a missing KWOKNodeClass, got %v", err)
	}
}

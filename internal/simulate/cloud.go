package simulate

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/solver"
)

// cloud is the simulated provider: the kwok provider's catalog and image
// drift, kept in memory. provisioning.ResolveTypes reads instance types
// through it exactly as the controller does; launches are decided by
// launch, since nothing is created anywhere.
type cloud struct {
	types   []*instancetype.InstanceType
	byName  map[string]*instancetype.InstanceType
	classes map[string]*kwokv1alpha1.KWOKNodeClass
}

var _ cloudprovider.CloudProvider = (*cloud)(nil)

var errNotSimulated = errors.New("the simulator launches instances itself; this call is not used")

func newCloud(types []*instancetype.InstanceType, classes map[string]*kwokv1alpha1.KWOKNodeClass) *cloud {
	c := &cloud{types: types, byName: map[string]*instancetype.InstanceType{}, classes: classes}
	for _, it := range types {
		c.byName[it.Name] = it
	}
	return c
}

func (c *cloud) Name() string { return "kwok" }

// InstanceTypes returns the catalog for a NodePool whose KWOKNodeClass
// exists. The types are shared and must not be changed; the callers
// (ResolveTypes, overlays) do not.
func (c *cloud) InstanceTypes(_ context.Context, np *karpv1.NodePool) ([]*instancetype.InstanceType, error) {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil || c.classes[ref.Name] == nil {
		name := "(none)"
		if ref != nil {
			name = ref.Name
		}
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: name, Reason: "KWOKNodeClass " + name + " is not in the input"}
	}
	return c.types, nil
}

func (c *cloud) Create(context.Context, *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	return nil, errNotSimulated
}
func (c *cloud) Delete(context.Context, *karpv1.NodeClaim) error { return errNotSimulated }
func (c *cloud) Get(context.Context, string) (*karpv1.NodeClaim, error) {
	return nil, errNotSimulated
}
func (c *cloud) List(context.Context) ([]*karpv1.NodeClaim, error) { return nil, errNotSimulated }

// IsDrifted is the kwok provider's answer: the image changed.
func (c *cloud) IsDrifted(_ context.Context, claim *karpv1.NodeClaim) (string, error) {
	ref := claim.Spec.NodeClassRef
	if ref == nil || c.classes[ref.Name] == nil {
		return "", nil
	}
	if claim.Status.ImageID != "" && claim.Status.ImageID != c.classes[ref.Name].Spec.Image {
		return "ImageDrift", nil
	}
	return "", nil
}

// offering is what a launch bought.
type offering struct {
	it                 *instancetype.InstanceType
	zone, capacityType string
	price              float64
}

// launch picks what the kwok provider would buy for a planned claim: the
// cheapest available offering its requirements allow, of the types it may
// launch as (already cheapest first), ties by type name.
func (c *cloud) launch(nc *solver.NewClaim) (offering, error) {
	type cand struct {
		it *instancetype.InstanceType
		o  instancetype.Offering
	}
	var cands []cand
	for _, it := range nc.InstanceTypes {
		if o, ok := it.Offerings.Cheapest(nc.Requirements); ok {
			cands = append(cands, cand{it, o})
		}
	}
	if len(cands) == 0 {
		return offering{}, fmt.Errorf("no available offering for the %d instance types planned", len(nc.InstanceTypes))
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].o.Price != cands[j].o.Price {
			return cands[i].o.Price < cands[j].o.Price
		}
		return cands[i].it.Name < cands[j].it.Name
	})
	b := cands[0]
	return offering{it: b.it, zone: b.o.Zone, capacityType: b.o.CapacityType, price: b.o.Price}, nil
}

// resources are a node's capacity and allocatable, as the kwok provider
// makes them: the memory the hypervisor keeps is gone from capacity.
func resources(it *instancetype.InstanceType) (capacity, allocatable corev1.ResourceList) {
	capacity = it.Capacity.DeepCopy()
	mem := capacity[corev1.ResourceMemory]
	mem.Sub(it.VMMemoryOverhead())
	capacity[corev1.ResourceMemory] = mem
	return capacity, it.Allocatable()
}

// instanceLabels are the labels of an instance: its type's single-valued
// labels and the offering's zone and capacity type.
func instanceLabels(o offering) map[string]string {
	labels := o.it.Requirements.Labels()
	labels[corev1.LabelTopologyZone] = o.zone
	labels[karpv1.CapacityTypeLabelKey] = o.capacityType
	return labels
}

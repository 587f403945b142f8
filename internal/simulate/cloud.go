package simulate

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/cloudprovider/offline"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/solver"
)

// cloud is the simulated provider: each NodePool's instance types as its
// NodeClass gives them offline (the kwok catalog, or the AWS catalog shaped
// by an EC2NodeClass), and the kwok provider's image drift, kept in memory.
// provisioning.ResolveTypes reads instance types through it exactly as the
// controller does; launches are decided by launch, since nothing is created
// anywhere.
type cloud struct {
	*offline.Provider
	classes map[string]*kwokv1alpha1.KWOKNodeClass
}

var _ cloudprovider.CloudProvider = (*cloud)(nil)

func newCloud(p *offline.Provider, classes map[string]*kwokv1alpha1.KWOKNodeClass) *cloud {
	return &cloud{Provider: p, classes: classes}
}

// kwokClass is the KWOKNodeClass ref names, or nil.
func (c *cloud) kwokClass(ref *karpv1.NodeClassReference) *kwokv1alpha1.KWOKNodeClass {
	if ref == nil || !offline.IsKWOKNodeClass(ref) {
		return nil
	}
	return c.classes[ref.Name]
}

// instanceType is the type called name that np may launch, or nil.
func (c *cloud) instanceType(np *karpv1.NodePool, name string) *instancetype.InstanceType {
	if np == nil {
		return nil
	}
	its, err := c.InstanceTypes(context.Background(), np)
	if err != nil {
		return nil
	}
	i := sort.Search(len(its), func(i int) bool { return its[i].Name >= name })
	if i < len(its) && its[i].Name == name {
		return its[i]
	}
	return nil
}

// IsDrifted is the kwok provider's answer: the image changed. Offline, an
// EC2NodeClass's machine image is not resolved, so its nodes never drift
// by image here.
func (c *cloud) IsDrifted(_ context.Context, claim *karpv1.NodeClaim) (string, error) {
	class := c.kwokClass(claim.Spec.NodeClassRef)
	if class == nil {
		return "", nil
	}
	if claim.Status.ImageID != "" && claim.Status.ImageID != class.Spec.Image {
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

package instancetype

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// DefaultVMMemoryOverheadPercent is the share of nominal memory that the
// hypervisor and kernel keep, as Karpenter estimates it.
const DefaultVMMemoryOverheadPercent = 0.075

// InstanceType is one kind of machine and the ways it can be bought.
type InstanceType struct {
	Name string
	// Requirements are the labels the machine's node will have, as requirements:
	// instance type, architecture, OS, and the zones and capacity types of its
	// offerings.
	Requirements scheduling.Requirements
	// Capacity is what the machine has: nominal memory, unless CapacitySource
	// says it was overridden.
	Capacity corev1.ResourceList
	Overhead Overhead
	// CapacitySource names where non-nominal capacities came from, per resource
	// ("NodeOverlay real-memory", "learned from node ip-10-0-0-1"). A memory
	// capacity that did not come from the catalog is the node's real memory, so
	// no VM overhead is estimated for it.
	CapacitySource map[corev1.ResourceName]string
	Offerings      Offerings
}

// Overhead is what a node keeps back from pods.
type Overhead struct {
	// VMMemoryPercent of nominal memory is assumed lost to the hypervisor.
	VMMemoryPercent   float64
	KubeReserved      corev1.ResourceList
	SystemReserved    corev1.ResourceList
	EvictionThreshold corev1.ResourceList
}

// Allocatable is what pods may request on a node of this type.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	out := corev1.ResourceList{}
	for name := range it.Capacity {
		a := it.Arithmetic(name)
		out[name] = a.Allocatable
	}
	return out
}

// VMMemoryOverhead is the memory the hypervisor is assumed to keep, rounded up
// to a whole MiB; zero when the memory capacity is the node's real one.
func (it *InstanceType) VMMemoryOverhead() resource.Quantity {
	mem, ok := it.Capacity[corev1.ResourceMemory]
	if !ok || it.Overhead.VMMemoryPercent == 0 || it.CapacitySource[corev1.ResourceMemory] != "" {
		return resource.Quantity{Format: resource.BinarySI}
	}
	const mi = 1 << 20
	miB := int64(math.Ceil(float64(mem.Value()) * it.Overhead.VMMemoryPercent / mi))
	return *resource.NewQuantity(miB*mi, resource.BinarySI)
}

// Offering is one way to buy an instance type: a zone, a capacity type and a
// price.
type Offering struct {
	Zone         string
	CapacityType string
	// Price is per hour.
	Price float64
	// Available is false when the provider is out of capacity for this offering.
	Available bool
}

// Offerings are an instance type's offerings.
type Offerings []Offering

// Available returns the offerings that can be launched now.
func (os Offerings) Available() Offerings {
	out := make(Offerings, 0, len(os))
	for _, o := range os {
		if o.Available {
			out = append(out, o)
		}
	}
	return out
}

// Cheapest returns the cheapest available offering whose zone and capacity type
// satisfy reqs, and whether there was one. Ties go to the first in order.
func (os Offerings) Cheapest(reqs scheduling.Requirements) (Offering, bool) {
	var best Offering
	found := false
	for _, o := range os {
		if !o.Available || !o.Allowed(reqs) {
			continue
		}
		if !found || o.Price < best.Price {
			best, found = o, true
		}
	}
	return best, found
}

// Allowed reports whether reqs permit this offering's zone and capacity type.
func (o Offering) Allowed(reqs scheduling.Requirements) bool {
	if r, ok := reqs[corev1.LabelTopologyZone]; ok && !r.Has(o.Zone) {
		return false
	}
	if r, ok := reqs[CapacityTypeLabel]; ok && !r.Has(o.CapacityType) {
		return false
	}
	return true
}

// CapacityTypeLabel is karpenter.sh/capacity-type.
const CapacityTypeLabel = "karpenter.sh/capacity-type"

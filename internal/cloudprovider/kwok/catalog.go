package kwok

import (
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/internal/catalog"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Labels the kwok provider puts on its instance types, so NodePools can select
// by family or size as they do with a cloud's own labels.
const (
	LabelInstanceFamily = "nodewright.dev/instance-family"
	LabelInstanceSize   = "nodewright.dev/instance-size"
	LabelInstanceCPU    = "nodewright.dev/instance-cpu"
	LabelInstanceMemory = "nodewright.dev/instance-memory" // MiB
	LabelInstanceGPU    = "nodewright.dev/instance-gpu-count"
)

// Options shape the instance types a catalog turns into.
type Options struct {
	// VMMemoryOverheadPercent of memory is assumed lost to the hypervisor.
	VMMemoryOverheadPercent float64
}

// Build makes the catalog's instance types as the kwok provider simulates
// them, sorted by name.
func Build(c *catalog.Catalog, opts Options) []*instancetype.InstanceType {
	out := make([]*instancetype.InstanceType, 0, len(c.InstanceTypes))
	for _, t := range c.InstanceTypes {
		out = append(out, instanceType(t, opts))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func instanceType(t catalog.Type, opts Options) *instancetype.InstanceType {
	arch, os := t.Arch, t.OS
	if arch == "" {
		arch = "amd64"
	}
	if os == "" {
		os = "linux"
	}
	var offerings instancetype.Offerings
	zones, capacityTypes := map[string]bool{}, map[string]bool{}
	for _, o := range t.Offerings {
		offerings = append(offerings, instancetype.Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, Available: !o.Unavailable})
		zones[o.Zone], capacityTypes[o.CapacityType] = true, true
	}
	reqs := scheduling.NewRequirements(
		scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, t.Name),
		scheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, arch),
		scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, os),
		scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, keys(zones)...),
		scheduling.NewRequirement(instancetype.CapacityTypeLabel, corev1.NodeSelectorOpIn, keys(capacityTypes)...),
		scheduling.NewRequirement(LabelInstanceCPU, corev1.NodeSelectorOpIn, strconv.FormatInt(t.CPU, 10)),
		scheduling.NewRequirement(LabelInstanceMemory, corev1.NodeSelectorOpIn, strconv.FormatInt(t.MemoryMiB, 10)),
		scheduling.NewRequirement(LabelInstanceGPU, corev1.NodeSelectorOpIn, strconv.FormatInt(t.GPUs, 10)),
	)
	if t.Family != "" {
		reqs.Add(scheduling.NewRequirement(LabelInstanceFamily, corev1.NodeSelectorOpIn, t.Family))
	}
	if t.Size != "" {
		reqs.Add(scheduling.NewRequirement(LabelInstanceSize, corev1.NodeSelectorOpIn, t.Size))
	}
	for _, k := range keys(t.Labels) {
		reqs.Add(scheduling.NewRequirement(k, corev1.NodeSelectorOpIn, t.Labels[k]))
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(t.CPU, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(t.MemoryMiB<<20, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(t.Pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	if t.GPUs > 0 {
		capacity[corev1.ResourceName(t.GPUResourceName())] = *resource.NewQuantity(t.GPUs, resource.DecimalSI)
	}
	return &instancetype.InstanceType{
		Name:         t.Name,
		Requirements: reqs,
		Capacity:     capacity,
		Overhead: instancetype.Overhead{
			VMMemoryPercent:   opts.VMMemoryOverheadPercent,
			KubeReserved:      instancetype.KubeReserved(t.CPU, t.Pods),
			EvictionThreshold: instancetype.DefaultEvictionThreshold(),
		},
		Offerings: offerings,
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

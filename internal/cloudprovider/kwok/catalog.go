package kwok

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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

// Catalog is the JSON form of an instance-type catalog (docs/kwok.md):
//
//	{"instanceTypes": [{"name": "m5.large", "family": "m5", "size": "large",
//	  "cpu": 2, "memoryMiB": 8192, "pods": 29, "arch": "amd64",
//	  "gpus": 0, "offerings": [{"zone": "zone-a", "capacityType": "on-demand",
//	  "price": 0.096}]}]}
type Catalog struct {
	InstanceTypes []CatalogType `json:"instanceTypes"`
}

// CatalogType is one instance type of a catalog.
type CatalogType struct {
	Name      string `json:"name"`
	Family    string `json:"family,omitempty"`
	Size      string `json:"size,omitempty"`
	CPU       int64  `json:"cpu"`
	MemoryMiB int64  `json:"memoryMiB"`
	Pods      int64  `json:"pods"`
	Arch      string `json:"arch,omitempty"` // amd64 (default) or arm64
	OS        string `json:"os,omitempty"`   // linux (default)
	// GPUs are nvidia.com/gpu devices.
	GPUs      int64             `json:"gpus,omitempty"`
	Offerings []CatalogOffering `json:"offerings"`
}

// CatalogOffering is one way to buy a type.
type CatalogOffering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	// Unavailable offerings are listed but cannot be launched.
	Unavailable bool `json:"unavailable,omitempty"`
}

// ReadCatalog decodes a JSON catalog and checks it; errors name the type and
// field to fix.
func ReadCatalog(r io.Reader) (*Catalog, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	c := &Catalog{}
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("reading instance-type catalog: %w", err)
	}
	return c, c.Validate()
}

// Validate checks every type and offering.
func (c *Catalog) Validate() error {
	if len(c.InstanceTypes) == 0 {
		return fmt.Errorf("instance-type catalog: instanceTypes is empty; list at least one type")
	}
	seen := map[string]bool{}
	for i, t := range c.InstanceTypes {
		at := fmt.Sprintf("instanceTypes[%d]", i)
		if t.Name != "" {
			at += " (" + t.Name + ")"
		}
		switch {
		case t.Name == "":
			return fmt.Errorf("%s: name is empty; give each type a unique name such as \"m5.large\"", at)
		case seen[t.Name]:
			return fmt.Errorf("%s: name is used twice; names must be unique", at)
		case t.CPU <= 0:
			return fmt.Errorf("%s: cpu must be a positive number of vCPUs", at)
		case t.MemoryMiB <= 0:
			return fmt.Errorf("%s: memoryMiB must be positive", at)
		case t.Pods <= 0:
			return fmt.Errorf("%s: pods must be a positive maximum pod count", at)
		case t.Arch != "" && t.Arch != "amd64" && t.Arch != "arm64":
			return fmt.Errorf("%s: arch %q must be amd64 or arm64", at, t.Arch)
		case len(t.Offerings) == 0:
			return fmt.Errorf("%s: offerings is empty; add at least one zone, capacity type and price", at)
		}
		seen[t.Name] = true
		for j, o := range t.Offerings {
			oat := fmt.Sprintf("%s.offerings[%d]", at, j)
			switch {
			case o.Zone == "":
				return fmt.Errorf("%s: zone is empty", oat)
			case o.CapacityType != "on-demand" && o.CapacityType != "spot" && o.CapacityType != "reserved":
				return fmt.Errorf("%s: capacityType %q must be on-demand, spot or reserved", oat, o.CapacityType)
			case o.Price < 0:
				return fmt.Errorf("%s: price must not be negative", oat)
			}
		}
	}
	return nil
}

// Options shape the instance types a catalog turns into.
type Options struct {
	// VMMemoryOverheadPercent of memory is assumed lost to the hypervisor.
	VMMemoryOverheadPercent float64
}

// Build makes the catalog's instance types, sorted by name.
func (c *Catalog) Build(opts Options) []*instancetype.InstanceType {
	out := make([]*instancetype.InstanceType, 0, len(c.InstanceTypes))
	for _, t := range c.InstanceTypes {
		out = append(out, t.instanceType(opts))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (t CatalogType) instanceType(opts Options) *instancetype.InstanceType {
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
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(t.CPU, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(t.MemoryMiB<<20, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(t.Pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	if t.GPUs > 0 {
		capacity["nvidia.com/gpu"] = *resource.NewQuantity(t.GPUs, resource.DecimalSI)
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

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

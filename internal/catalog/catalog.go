// Package catalog is the JSON form of an instance-type catalog: the machine
// shapes a cloud sells and their offerings (zone, capacity type, price). The
// kwok provider simulates nodes of any catalog; the AWS provider ships one
// generated from EC2's own data and turns it into node shapes by an
// EC2NodeClass's settings. `nodewright catalog` prints one and `--catalog`
// reads one back (docs/catalog.md).
package catalog

import (
	"encoding/json"
	"fmt"
	"io"
)

// Catalog is one catalog document:
//
//	{"instanceTypes": [{"name": "m5.large", "family": "m5", "size": "large",
//	  "cpu": 2, "memoryMiB": 8192, "pods": 29, "arch": "amd64",
//	  "gpus": 0, "offerings": [{"zone": "zone-a", "capacityType": "on-demand",
//	  "price": 0.096}]}]}
type Catalog struct {
	// Region the offerings are in, for a cloud's catalog; "" for kwok's.
	Region string `json:"region,omitempty"`
	// PriceSource says where the on-demand prices came from.
	PriceSource string `json:"priceSource,omitempty"`
	// SpotPriceModel says how spot prices were made when they are a model,
	// not the provider's price history.
	SpotPriceModel string `json:"spotPriceModel,omitempty"`
	// ZoneIDs maps each zone to its zone ID (topology.k8s.aws/zone-id on AWS).
	ZoneIDs       map[string]string `json:"zoneIDs,omitempty"`
	InstanceTypes []Type            `json:"instanceTypes"`
}

// Type is one instance type of a catalog.
type Type struct {
	Name      string `json:"name"`
	Family    string `json:"family,omitempty"`
	Size      string `json:"size,omitempty"`
	CPU       int64  `json:"cpu"`
	MemoryMiB int64  `json:"memoryMiB"`
	// Pods is the default maximum pod count of a node of this type.
	Pods int64  `json:"pods"`
	Arch string `json:"arch,omitempty"` // amd64 (default) or arm64
	OS   string `json:"os,omitempty"`   // linux (default)
	// GPUs are devices of GPUResource, nvidia.com/gpu unless it says otherwise.
	GPUs        int64  `json:"gpus,omitempty"`
	GPUResource string `json:"gpuResource,omitempty"`
	// ENIs and IPv4PerENI are the network interfaces and the addresses each
	// takes, from which the AWS provider computes max pods; 0 when unknown.
	ENIs       int64 `json:"enis,omitempty"`
	IPv4PerENI int64 `json:"ipv4PerENI,omitempty"`
	// LocalNVMeGiB is the instance-store NVMe capacity, 0 for none.
	LocalNVMeGiB int64 `json:"localNVMeGiB,omitempty"`
	// ExtendedResources are further devices each node has beyond the GPUs,
	// by extended resource name and count: vpc.amazonaws.com/efa,
	// aws.amazon.com/neuroncore. Optional; a provider that does not know a
	// resource leaves it out of node capacity.
	ExtendedResources map[string]int64 `json:"extendedResources,omitempty"`
	// Labels are further labels every node of this type carries, such as a
	// cloud's own well-known labels (karpenter.k8s.aws/instance-family).
	Labels    map[string]string `json:"labels,omitempty"`
	Offerings []Offering        `json:"offerings"`
}

// Offering is one way to buy a type.
type Offering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	// Unavailable offerings are listed but cannot be launched.
	Unavailable bool `json:"unavailable,omitempty"`
}

// GPUResourceName is the extended resource a type's GPUs are, by default
// nvidia.com/gpu.
func (t Type) GPUResourceName() string {
	if t.GPUResource == "" {
		return "nvidia.com/gpu"
	}
	return t.GPUResource
}

// Read decodes a JSON catalog and checks it; errors name the type and field
// to fix.
func Read(r io.Reader) (*Catalog, error) {
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
		case t.GPUs < 0:
			return fmt.Errorf("%s: gpus must not be negative", at)
		case t.ENIs < 0 || t.IPv4PerENI < 0:
			return fmt.Errorf("%s: enis and ipv4PerENI must not be negative", at)
		case t.LocalNVMeGiB < 0:
			return fmt.Errorf("%s: localNVMeGiB must not be negative", at)
		case negativeCount(t.ExtendedResources) != "":
			return fmt.Errorf("%s: extendedResources[%q] must not be negative", at, negativeCount(t.ExtendedResources))
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

// negativeCount returns a resource whose count is negative, "" when none is.
func negativeCount(counts map[string]int64) string {
	for name, n := range counts {
		if n < 0 {
			return name
		}
	}
	return ""
}

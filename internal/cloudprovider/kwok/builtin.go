package kwok

import (
	"math"

	"github.com/nodewright/nodewright/internal/catalog"
)

// Zones of the built-in catalog.
var Zones = []string{"zone-a", "zone-b", "zone-c"}

// family describes a built-in instance family: memory per vCPU, on-demand
// price per vCPU-hour, architecture, and the sizes it comes in.
type family struct {
	name       string
	gibPerCPU  int64
	pricePerCP float64
	arch       string
	sizes      []string
}

var generalSizes = []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"}

// Shapes and prices follow the familiar public-cloud families closely enough
// for plans and demos to look like real ones; they are not a price list.
var families = []family{
	{"c5", 2, 0.0425, "amd64", generalSizes},
	{"m5", 4, 0.048, "amd64", generalSizes},
	{"r5", 8, 0.063, "amd64", generalSizes},
	{"r5a", 8, 0.0565, "amd64", generalSizes},
	{"c6g", 2, 0.034, "arm64", generalSizes},
	{"m6g", 4, 0.0385, "arm64", generalSizes},
}

// sizeCPU and sizePods give each size's vCPUs and maximum pods.
var sizeCPU = map[string]int64{"large": 2, "xlarge": 4, "2xlarge": 8, "4xlarge": 16, "8xlarge": 32, "12xlarge": 48, "16xlarge": 64}
var sizePods = map[string]int64{"large": 29, "xlarge": 58, "2xlarge": 58, "4xlarge": 234, "8xlarge": 234, "12xlarge": 234, "16xlarge": 737}

// gpuTypes are the built-in GPU instance types (nvidia.com/gpu).
var gpuTypes = []catalog.Type{
	{Name: "g4dn.xlarge", Family: "g4dn", Size: "xlarge", CPU: 4, MemoryMiB: 16 << 10, Pods: 29, GPUs: 1},
	{Name: "g4dn.2xlarge", Family: "g4dn", Size: "2xlarge", CPU: 8, MemoryMiB: 32 << 10, Pods: 29, GPUs: 1},
	{Name: "g4dn.12xlarge", Family: "g4dn", Size: "12xlarge", CPU: 48, MemoryMiB: 192 << 10, Pods: 234, GPUs: 4},
}

var gpuPrices = map[string]float64{"g4dn.xlarge": 0.526, "g4dn.2xlarge": 0.752, "g4dn.12xlarge": 3.912}

// BuiltinCatalog is the kwok provider's default catalog: compute, general,
// memory and arm64 families in seven sizes and a few GPU types, each offered
// on-demand and as spot in three zones. Spot costs 30-45% of on-demand,
// varying by zone so that zones differ.
func BuiltinCatalog() *catalog.Catalog {
	c := &catalog.Catalog{}
	for _, f := range families {
		for _, size := range f.sizes {
			cpu := sizeCPU[size]
			t := catalog.Type{
				Name: f.name + "." + size, Family: f.name, Size: size,
				CPU: cpu, MemoryMiB: cpu * f.gibPerCPU << 10, Pods: sizePods[size], Arch: f.arch,
			}
			t.Offerings = offerings(float64(cpu)*f.pricePerCP, len(c.InstanceTypes))
			c.InstanceTypes = append(c.InstanceTypes, t)
		}
	}
	for _, t := range gpuTypes {
		t.Offerings = offerings(gpuPrices[t.Name], len(c.InstanceTypes))
		c.InstanceTypes = append(c.InstanceTypes, t)
	}
	return c
}

// offerings prices a type on-demand in every zone and as spot at a discount
// that depends on the zone and the type, deterministically.
func offerings(onDemand float64, seed int) []catalog.Offering {
	var out []catalog.Offering
	for zi, z := range Zones {
		out = append(out, catalog.Offering{Zone: z, CapacityType: "on-demand", Price: round(onDemand)})
		discount := 0.30 + 0.05*float64((seed+zi)%4)
		out = append(out, catalog.Offering{Zone: z, CapacityType: "spot", Price: round(onDemand * discount)})
	}
	return out
}

func round(p float64) float64 { return math.Round(p*10000) / 10000 }

package awscatalog

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/nodewright/nodewright/internal/catalog"
)

// DefaultRegion is the region nodewright assumes when none is given.
const DefaultRegion = "us-east-1"

// SpotShare is the share of the on-demand price the spot price model
// charges, until spot prices come from EC2's price history.
const SpotShare = 0.35

// SpotPriceModel says how the catalog's spot prices are made.
const SpotPriceModel = "modelled, not EC2's spot price history: spot = 35% of the on-demand price, " +
	"rounded to 4 decimals, in every zone that offers the type, for types that support spot"

// Regions returns the regions of the built-in catalog, sorted.
func Regions() []string {
	d, err := builtin()
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(d.Regions))
	for _, r := range d.Regions {
		out = append(out, r.Name)
	}
	sort.Strings(out)
	return out
}

// Region returns the built-in catalog of one region: every type offered in
// one of its zones, sorted by name, with an on-demand offering in each such
// zone and a spot one where the type supports spot. The catalog is the
// caller's to change.
func Region(name string) (*catalog.Catalog, error) {
	d, err := builtin()
	if err != nil {
		return nil, err
	}
	return d.Region(name)
}

// Region returns the catalog of one region of d; see the package's Region.
func (d *Data) Region(name string) (*catalog.Catalog, error) {
	var region *RegionData
	for i := range d.Regions {
		if d.Regions[i].Name == name {
			region = &d.Regions[i]
		}
	}
	if region == nil {
		names := make([]string, 0, len(d.Regions))
		for _, r := range d.Regions {
			names = append(names, r.Name)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("AWS region %q is not in the built-in instance-type catalog; known regions: %s", name, strings.Join(names, ", "))
	}
	c := &catalog.Catalog{
		Region:         region.Name,
		PriceSource:    d.PriceSource,
		SpotPriceModel: SpotPriceModel,
		ZoneIDs:        map[string]string{},
	}
	zones := append([]ZoneData(nil), region.Zones...)
	sort.Slice(zones, func(i, j int) bool { return zones[i].Name < zones[j].Name })
	offered := map[int][]string{} // type index -> zones
	for _, z := range zones {
		if z.ID != "" {
			c.ZoneIDs[z.Name] = z.ID
		}
		for _, i := range z.Types {
			offered[i] = append(offered[i], z.Name)
		}
	}
	for i, f := range d.Types {
		if zs, ok := offered[i]; ok {
			c.InstanceTypes = append(c.InstanceTypes, catalogType(f, zs))
		}
	}
	sort.Slice(c.InstanceTypes, func(i, j int) bool { return c.InstanceTypes[i].Name < c.InstanceTypes[j].Name })
	if len(c.ZoneIDs) == 0 {
		c.ZoneIDs = nil
	}
	return c, nil
}

// catalogType is one type as the catalog holds it, offered in zones.
func catalogType(f TypeFacts, zones []string) catalog.Type {
	family, size, _ := splitName(f.Name)
	t := catalog.Type{
		Name:       f.Name,
		Family:     family,
		Size:       size,
		CPU:        f.VCPUs,
		MemoryMiB:  f.MemoryMiB,
		Pods:       ENILimitedPods(f.ENIs, f.IPv4PerENI, 0),
		Arch:       f.Arch,
		ENIs:       f.ENIs,
		IPv4PerENI: f.IPv4PerENI,
		// EC2 and Karpenter's label say GB; the figure is kept as given.
		LocalNVMeGiB: f.LocalNVMeGB,
		Labels:       Labels(f),
	}
	extra := devices(f)
	// One accelerator is the type's GPUs; any other devices are extended
	// resources.
	for _, r := range []string{ResourceNVIDIAGPU, ResourceAMDGPU, ResourceHabanaGaudi, ResourceAWSNeuron} {
		if n := extra[r]; n > 0 && t.GPUs == 0 {
			t.GPUs, t.GPUResource = n, r
			delete(extra, r)
		}
	}
	for r, n := range extra {
		if n > 0 {
			if t.ExtendedResources == nil {
				t.ExtendedResources = map[string]int64{}
			}
			t.ExtendedResources[r] = n
		}
	}
	spot := roundPrice(f.OnDemandPrice * SpotShare)
	for _, z := range zones {
		t.Offerings = append(t.Offerings, catalog.Offering{Zone: z, CapacityType: "on-demand", Price: f.OnDemandPrice})
		if f.Spot {
			t.Offerings = append(t.Offerings, catalog.Offering{Zone: z, CapacityType: "spot", Price: spot})
		}
	}
	return t
}

// ENILimitedPods is the most pods the VPC CNI can give addresses to: on each
// ENI of the default network card but reserved ones, every address but the
// ENI's own, plus 2 for host-network pods (ENIs x (IPv4 per ENI - 1) + 2).
// It is 0 when every ENI is reserved.
func ENILimitedPods(enis, ipv4PerENI int64, reservedENIs int) int64 {
	usable := enis - int64(reservedENIs)
	if usable <= 0 {
		return 0
	}
	return usable*(ipv4PerENI-1) + 2
}

// roundPrice rounds a price to 4 decimals.
func roundPrice(p float64) float64 { return math.Round(p*10000) / 10000 }

// OnDemandPrice is the built-in on-demand price of a type in USD per hour
// (see the data's PriceSource), and whether there is one.
func OnDemandPrice(name string) (float64, bool) {
	d, err := builtin()
	if err != nil {
		return 0, false
	}
	i, ok := d.index()[name]
	if !ok {
		return 0, false
	}
	return d.Types[i].OnDemandPrice, true
}

// index maps type names to their place in d.Types.
func (d *Data) index() map[string]int {
	d.indexOnce.Do(func() {
		d.byName = make(map[string]int, len(d.Types))
		for i, t := range d.Types {
			d.byName[t.Name] = i
		}
	})
	return d.byName
}

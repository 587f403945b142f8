package aws

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/internal/catalog"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Labels of AWS nodes beyond the instance type's own.
const (
	// LabelZoneID is topology.k8s.aws/zone-id, the zone's ID (use1-az1),
	// which names the same place in every account, unlike the zone name.
	LabelZoneID = "topology.k8s.aws/zone-id"
	// ResourcePrivateIPv4 is the addresses Windows pods take, which the VPC
	// resource controller advertises on Windows nodes.
	ResourcePrivateIPv4 = "vpc.amazonaws.com/PrivateIPv4Address"
)

// InstanceTypes shapes every type of the catalog as a node launched with s
// would be, sorted by name. Types a node of s cannot run are left out: arm64
// types for Windows, types offered in none of s.Zones, and types with no
// room for a pod (every ENI reserved).
func InstanceTypes(c *catalog.Catalog, s NodeSettings) ([]*instancetype.InstanceType, error) {
	if c == nil {
		return nil, fmt.Errorf("no AWS instance-type catalog")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	f := familyOf(s.AMIFamily)
	zones := map[string]bool{}
	for _, z := range s.Zones {
		zones[z] = true
	}
	out := make([]*instancetype.InstanceType, 0, len(c.InstanceTypes))
	for i := range c.InstanceTypes {
		t := &c.InstanceTypes[i]
		if f.windowsBuild != "" && t.Arch == "arm64" {
			continue
		}
		it := instanceType(c, t, f, s, zones)
		if it == nil {
			continue
		}
		out = append(out, it)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Validate checks the values Karpenter would parse, so that a bad one is an
// error naming the EC2NodeClass field rather than a wrong shape.
func (s NodeSettings) Validate() error {
	for _, f := range []struct {
		field string
		m     map[string]string
	}{{"spec.kubelet.kubeReserved", s.KubeReserved}, {"spec.kubelet.systemReserved", s.SystemReserved}} {
		field, m := f.field, f.m
		for k, v := range m {
			if _, err := resource.ParseQuantity(v); err != nil {
				return fmt.Errorf("%s[%s]: %q is not a quantity: %w", field, k, v, err)
			}
		}
	}
	for k, v := range s.EvictionHard {
		if strings.HasSuffix(v, "%") {
			if _, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64); err != nil {
				return fmt.Errorf("spec.kubelet.evictionHard[%s]: %q is not a percentage", k, v)
			}
		} else if _, err := resource.ParseQuantity(v); err != nil {
			return fmt.Errorf("spec.kubelet.evictionHard[%s]: %q is not a quantity or percentage: %w", k, v, err)
		}
	}
	return nil
}

// instanceType shapes one catalog type; nil when no offering is left in the
// allowed zones or no pod fits.
func instanceType(c *catalog.Catalog, t *catalog.Type, f family, s NodeSettings, allowed map[string]bool) *instancetype.InstanceType {
	var offerings instancetype.Offerings
	zones, capacityTypes := map[string]bool{}, map[string]bool{}
	for _, o := range t.Offerings {
		if len(allowed) > 0 && !allowed[o.Zone] {
			continue
		}
		offerings = append(offerings, instancetype.Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, Available: !o.Unavailable})
		zones[o.Zone], capacityTypes[o.CapacityType] = true, true
	}
	if len(offerings) == 0 {
		return nil
	}
	pods := maxPods(t, f, s)
	if pods <= 0 {
		return nil
	}
	arch := t.Arch
	if arch == "" {
		arch = "amd64"
	}
	memMiB := t.MemoryMiB
	if arch == "arm64" {
		// Graviton kernels keep 64Mi for the contiguous memory allocator.
		memMiB -= 64
	}
	storage := s.ephemeralStorage(f, t.LocalNVMeGiB)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(t.CPU, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(memMiB<<20, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: storage,
	}
	if t.GPUs > 0 {
		capacity[corev1.ResourceName(t.GPUResourceName())] = *resource.NewQuantity(t.GPUs, resource.DecimalSI)
	}
	for name, n := range t.ExtendedResources {
		capacity[corev1.ResourceName(name)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	if f.windowsBuild != "" && t.IPv4PerENI > 1 {
		capacity[ResourcePrivateIPv4] = *resource.NewQuantity(t.IPv4PerENI-1, resource.DecimalSI)
	}
	reservedPods := pods
	if f.eniLimitedMemoryOverhead {
		// The ENI count with no ENI reserved, as Karpenter counts it here.
		reservedPods = awscatalog.ENILimitedPods(t.ENIs, t.IPv4PerENI, 0)
	}
	it := &instancetype.InstanceType{
		Name:         t.Name,
		Requirements: requirements(c, t, arch, f, s.ZoneIDs, zones, capacityTypes),
		Capacity:     capacity,
		Offerings:    offerings,
		Overhead: instancetype.Overhead{
			VMMemoryPercent: s.VMMemoryOverheadPercent,
			KubeReserved:    kubeReserved(t.CPU, reservedPods, s.KubeReserved),
			SystemReserved:  quantities(s.SystemReserved),
		},
	}
	it.Overhead.EvictionThreshold = evictionThreshold(it, storage, s.EvictionHard)
	return it
}

// maxPods is the node's pod capacity: the class's maxPods, else the
// ENI-limited count where the family uses it, else 110; capped by
// podsPerCore x vCPUs where the family honours podsPerCore.
func maxPods(t *catalog.Type, f family, s NodeSettings) int64 {
	var n int64
	switch {
	case s.MaxPods != nil:
		n = int64(*s.MaxPods)
	case f.eniLimitedPodDensity && t.ENIs > 0:
		n = awscatalog.ENILimitedPods(t.ENIs, t.IPv4PerENI, s.ReservedENIs)
	case f.eniLimitedPodDensity:
		n = t.Pods // a catalog without ENI facts gives the count itself
	default:
		n = 110
	}
	if s.PodsPerCore != nil && *s.PodsPerCore > 0 && f.podsPerCore {
		n = min(n, int64(*s.PodsPerCore)*t.CPU)
	}
	return n
}

// requirements are the labels a node of the type has, as requirements.
// Every karpenter.k8s.aws label the type lacks is DoesNotExist, so that a
// NodePool asking for it (instance-gpu-count Gt 0) leaves the type out.
func requirements(c *catalog.Catalog, t *catalog.Type, arch string, f family, zoneIDs map[string]string, zones, capacityTypes map[string]bool) scheduling.Requirements {
	os := "linux"
	if f.windowsBuild != "" {
		os = "windows"
	}
	reqs := scheduling.NewRequirements(
		scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, t.Name),
		scheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, arch),
		scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, os),
		scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, slices.Sorted(maps.Keys(zones))...),
		scheduling.NewRequirement(instancetype.CapacityTypeLabel, corev1.NodeSelectorOpIn, slices.Sorted(maps.Keys(capacityTypes))...),
	)
	if c.Region != "" {
		reqs.Add(scheduling.NewRequirement(corev1.LabelTopologyRegion, corev1.NodeSelectorOpIn, c.Region))
	}
	if f.windowsBuild != "" {
		reqs.Add(scheduling.NewRequirement(corev1.LabelWindowsBuild, corev1.NodeSelectorOpIn, f.windowsBuild))
	} else {
		reqs.Add(scheduling.NewRequirement(corev1.LabelWindowsBuild, corev1.NodeSelectorOpDoesNotExist))
	}
	var ids []string
	for z := range zones {
		if id := zoneIDs[z]; id != "" {
			ids = append(ids, id)
		} else if id := c.ZoneIDs[z]; id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		reqs.Add(scheduling.NewRequirement(LabelZoneID, corev1.NodeSelectorOpIn, ids...))
	}
	for _, key := range awscatalog.InstanceLabels {
		if v, ok := t.Labels[key]; ok {
			reqs.Add(scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, v))
		} else {
			reqs.Add(scheduling.NewRequirement(key, corev1.NodeSelectorOpDoesNotExist))
		}
	}
	// Labels of a user's own catalog beyond the AWS ones.
	for _, key := range slices.Sorted(maps.Keys(t.Labels)) {
		if !reqs.Has(key) {
			reqs.Add(scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, t.Labels[key]))
		}
	}
	return reqs
}

// kubeReserved is what the kubelet keeps for itself: memory 11Mi per pod
// plus 255Mi, ephemeral-storage 1Gi, and CPU 6% of the first core, 1% of the
// second, 0.5% of the next two and 0.25% of the rest, each range truncated
// to whole millicores as Karpenter does; overrides replace a resource whole.
func kubeReserved(cpus, pods int64, overrides map[string]string) corev1.ResourceList {
	milli := cpus * 1000
	var cpu int64
	for _, r := range []struct {
		from, to int64
		share    float64
	}{{0, 1000, 0.06}, {1000, 2000, 0.01}, {2000, 4000, 0.005}, {4000, 1 << 31, 0.0025}} {
		if milli < r.from {
			break
		}
		span := min(milli, r.to) - r.from
		cpu += int64(float64(span) * r.share)
	}
	out := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity((11*pods+255)<<20, resource.BinarySI),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}
	for name, q := range quantities(overrides) {
		out[name] = q
	}
	return out
}

// evictionThreshold is the kubelet's hard eviction threshold: 100Mi of
// memory and 10% of ephemeral storage unless evictionHard says otherwise.
// A percentage is of the memory left after the VM overhead, or of the
// storage; 100% disables the threshold, as the kubelet reads it.
func evictionThreshold(it *instancetype.InstanceType, storage resource.Quantity, hard map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourceMemory:           resource.MustParse("100Mi"),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(math.Ceil(float64(storage.Value())/100*10)), resource.DecimalSI),
	}
	memory := it.Capacity[corev1.ResourceMemory].DeepCopy()
	vm := it.VMMemoryOverhead()
	memory.Sub(vm)
	for signal, name := range map[string]corev1.ResourceName{"memory.available": corev1.ResourceMemory, "nodefs.available": corev1.ResourceEphemeralStorage} {
		v, ok := hard[signal]
		if !ok {
			continue
		}
		base := memory
		if name == corev1.ResourceEphemeralStorage {
			base = storage
		}
		out[name] = evictionSignal(base, v)
	}
	return out
}

// evictionSignal reads a threshold: a quantity, or a percentage of base
// rounded up to a whole unit. Validate has checked it.
func evictionSignal(base resource.Quantity, v string) resource.Quantity {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		pct, _ := strconv.ParseFloat(p, 64)
		if pct == 100 {
			pct = 0
		}
		return *resource.NewQuantity(int64(math.Ceil(base.AsApproximateFloat64()/100*pct)), base.Format)
	}
	return resource.MustParse(v)
}

// quantities parses a resource map already checked by Validate. The pid
// reservation is not a resource pods request, so it is left out.
func quantities(m map[string]string) corev1.ResourceList {
	if len(m) == 0 {
		return nil
	}
	out := corev1.ResourceList{}
	for k, v := range m {
		if k == "pid" {
			continue
		}
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

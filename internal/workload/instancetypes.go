package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Zones of the benchmark's fake cloud.
var Zones = []string{"test-zone-1", "test-zone-2", "test-zone-3"}

// BenchmarkInstanceTypes are Karpenter's scheduling benchmark types: fake-it-i
// with i+1 vCPU, 2(i+1) GiB and 10(i+1) pods, kube-reserved 100m CPU and 10Mi
// memory and no other overhead, offered as spot in zones 1-2 and on-demand in
// zones 1-3 at 0.1 per vCPU plus 0.1 per 1e9 bytes of memory.
func BenchmarkInstanceTypes(n int) []*instancetype.InstanceType {
	out := make([]*instancetype.InstanceType, 0, n)
	for i := 0; i < n; i++ {
		cpu := int64(i + 1)
		mem := int64(2*(i+1)) << 30
		price := 0.1*float64(cpu) + 0.1*float64(mem)/1e9
		name := fmt.Sprintf("fake-it-%d", i)
		var offerings instancetype.Offerings
		for zi, z := range Zones {
			if zi < 2 {
				offerings = append(offerings, instancetype.Offering{Zone: z, CapacityType: "spot", Price: price, Available: true})
			}
			offerings = append(offerings, instancetype.Offering{Zone: z, CapacityType: "on-demand", Price: price, Available: true})
		}
		out = append(out, &instancetype.InstanceType{
			Name:         name,
			Requirements: Requirements(name, "amd64", offerings),
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(int64(10*(i+1)), resource.DecimalSI),
			},
			Overhead: instancetype.Overhead{KubeReserved: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("10Mi"),
			}},
			Offerings: offerings,
		})
	}
	return out
}

// Requirements are the well-known labels of an instance type: its name,
// architecture, OS, and the zones and capacity types it is offered in.
func Requirements(name, arch string, offerings instancetype.Offerings) scheduling.Requirements {
	var zones, capacityTypes []string
	seenZ, seenC := map[string]bool{}, map[string]bool{}
	for _, o := range offerings {
		if !seenZ[o.Zone] {
			seenZ[o.Zone] = true
			zones = append(zones, o.Zone)
		}
		if !seenC[o.CapacityType] {
			seenC[o.CapacityType] = true
			capacityTypes = append(capacityTypes, o.CapacityType)
		}
	}
	return scheduling.NewRequirements(
		scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, name),
		scheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, arch),
		scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux"),
		scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...),
		scheduling.NewRequirement(instancetype.CapacityTypeLabel, corev1.NodeSelectorOpIn, capacityTypes...),
	)
}

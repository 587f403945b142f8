package aws

import (
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/instancetype"
)

// NodeSettings are what shapes a node beyond its instance type: the
// EC2NodeClass's AMI family, kubelet settings and disks, and the provider's
// own settings.
type NodeSettings struct {
	// AMIFamily is AL2, AL2023, Bottlerocket, Windows2019/2022/2025 or
	// Custom; "" is AL2023.
	AMIFamily string
	// MaxPods and PodsPerCore are the kubelet's; nil leaves the default.
	MaxPods, PodsPerCore *int32
	// KubeReserved and SystemReserved override the computed reservations
	// per resource ("cpu", "memory", "ephemeral-storage").
	KubeReserved, SystemReserved map[string]string
	// EvictionHard overrides the eviction thresholds by signal
	// ("memory.available", "nodefs.available"), as a quantity or a
	// percentage of capacity. Soft thresholds do not reduce allocatable.
	EvictionHard map[string]string
	// BlockDevices are the class's block device mappings.
	BlockDevices []awsv1.BlockDeviceMapping
	// InstanceStorePolicy RAID0 makes the local NVMe disks the node's
	// ephemeral storage.
	InstanceStorePolicy string
	// Zones limits offerings to these zones (the zones of the class's
	// subnets); empty allows every zone of the catalog.
	Zones []string
	// ZoneIDs maps zone names to zone IDs as the class's subnets report
	// them; zones it lacks take the catalog's IDs.
	ZoneIDs map[string]string
	// VMMemoryOverheadPercent of memory is assumed lost to the hypervisor
	// (Karpenter's --vm-memory-overhead-percent, default 0.075).
	VMMemoryOverheadPercent float64
	// ReservedENIs are network interfaces kept from pods (--reserved-enis).
	ReservedENIs int
}

// SettingsFor returns the settings an EC2NodeClass gives its nodes, with the
// provider's defaults; a nil class gives an AL2023 node with defaults.
func SettingsFor(class *awsv1.EC2NodeClass) NodeSettings {
	s := NodeSettings{AMIFamily: awsv1.AMIFamilyAL2023, VMMemoryOverheadPercent: instancetype.DefaultVMMemoryOverheadPercent}
	if class == nil {
		return s
	}
	if f := class.AMIFamily(); f != "" {
		s.AMIFamily = f
	}
	if k := class.Spec.Kubelet; k != nil {
		s.MaxPods, s.PodsPerCore = k.MaxPods, k.PodsPerCore
		s.KubeReserved, s.SystemReserved, s.EvictionHard = k.KubeReserved, k.SystemReserved, k.EvictionHard
	}
	s.BlockDevices = class.Spec.BlockDeviceMappings
	if p := class.Spec.InstanceStorePolicy; p != nil {
		s.InstanceStorePolicy = string(*p)
	}
	for _, subnet := range class.Status.Subnets {
		if subnet.Zone != "" {
			s.Zones = append(s.Zones, subnet.Zone)
		}
		if subnet.Zone != "" && subnet.ZoneID != "" {
			if s.ZoneIDs == nil {
				s.ZoneIDs = map[string]string{}
			}
			s.ZoneIDs[subnet.Zone] = subnet.ZoneID
		}
	}
	return s
}

// ephemeralStorage is the node's ephemeral-storage capacity, as Karpenter
// picks it: the RAID0 instance store; else the volume marked rootVolume;
// else, for a custom image, the last mapped volume; else the mapping of the
// family's root device; else that device's default size.
func (s NodeSettings) ephemeralStorage(f family, localNVMeGB int64) resource.Quantity {
	if s.InstanceStorePolicy == string(awsv1.InstanceStorePolicyRAID0) && localNVMeGB > 0 {
		return *resource.NewQuantity(localNVMeGB*1000*1000*1000, resource.DecimalSI)
	}
	size := func(m awsv1.BlockDeviceMapping) (resource.Quantity, bool) {
		if m.EBS == nil || m.EBS.VolumeSize == nil {
			return resource.Quantity{}, false
		}
		return m.EBS.VolumeSize.DeepCopy(), true
	}
	if len(s.BlockDevices) > 0 {
		for _, m := range s.BlockDevices {
			if m.RootVolume {
				if q, ok := size(m); ok {
					return q
				}
			}
		}
		if f.ephemeralDevice == "" {
			if q, ok := size(s.BlockDevices[len(s.BlockDevices)-1]); ok {
				return q
			}
			return defaultEBSSize.DeepCopy()
		}
		for _, m := range s.BlockDevices {
			if m.DeviceName != nil && *m.DeviceName == f.ephemeralDevice {
				if q, ok := size(m); ok {
					return q
				}
			}
		}
	}
	return f.ephemeralSize.DeepCopy()
}

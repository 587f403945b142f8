package aws

import (
	"math"
	"slices"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
)

// Facts keeps what the catalog needs of one DescribeInstanceTypes record,
// without a price. ok is false for a type Karpenter's AWS provider does not
// launch: not hardware-virtualized, or neither x86_64 nor arm64. The
// catalog's generator (reading EC2's data as moto records it) and the live
// discovery both use it, so the built-in catalog and a live one agree.
func Facts(info ec2types.InstanceTypeInfo) (awscatalog.TypeFacts, bool) {
	arch := archOf(info.ProcessorInfo)
	if arch == "" || !slices.Contains(info.SupportedVirtualizationTypes, ec2types.VirtualizationTypeHvm) {
		return awscatalog.TypeFacts{}, false
	}
	f := awscatalog.TypeFacts{
		Name:       string(info.InstanceType),
		Arch:       arch,
		Hypervisor: string(info.Hypervisor),
		BareMetal:  deref(info.BareMetal),
		Spot:       slices.Contains(info.SupportedUsageClasses, ec2types.UsageClassTypeSpot),
	}
	if v := info.VCpuInfo; v != nil {
		f.VCPUs = int64(deref(v.DefaultVCpus))
	}
	if m := info.MemoryInfo; m != nil {
		f.MemoryMiB = deref(m.SizeInMiB)
	}
	if p := info.ProcessorInfo; p != nil {
		f.CPUManufacturer = deref(p.Manufacturer)
		f.ClockMHz = int64(math.Round(deref(p.SustainedClockSpeedInGhz) * 1000))
	}
	if n := info.NetworkInfo; n != nil {
		f.EncryptionInTransit = deref(n.EncryptionInTransitSupported)
		f.ENIs = int64(deref(n.MaximumNetworkInterfaces))
		f.IPv4PerENI = int64(deref(n.Ipv4AddressesPerInterface))
		// The VPC CNI gives pods addresses on the default network card's
		// interfaces only; a type with several cards has more in total.
		for _, card := range n.NetworkCards {
			if deref(card.NetworkCardIndex) == deref(n.DefaultNetworkCardIndex) && deref(card.MaximumNetworkInterfaces) > 0 {
				f.ENIs = int64(deref(card.MaximumNetworkInterfaces))
			}
			f.NetworkBandwidthMbps += int64(math.Round(deref(card.BaselineBandwidthInGbps) * 1000))
		}
		if n.EfaInfo != nil {
			f.EFAs = int64(deref(n.EfaInfo.MaximumEfaInterfaces))
		}
	}
	if e := info.EbsInfo; e != nil && e.EbsOptimizedSupport == ec2types.EbsOptimizedSupportDefault && e.EbsOptimizedInfo != nil {
		f.EBSBandwidthMbps = int64(deref(e.EbsOptimizedInfo.MaximumBandwidthInMbps))
	}
	if s := info.InstanceStorageInfo; s != nil && s.NvmeSupport != "" && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported && s.TotalSizeInGB != nil {
		f.LocalNVMeGB = *s.TotalSizeInGB
	}
	if g := info.GpuInfo; g != nil {
		for _, d := range g.Gpus {
			dev := awscatalog.Device{Name: deref(d.Name), Manufacturer: deref(d.Manufacturer), Count: int64(deref(d.Count))}
			if d.MemoryInfo != nil {
				dev.MemoryMiB = int64(deref(d.MemoryInfo.SizeInMiB))
			}
			f.GPUs = append(f.GPUs, dev)
		}
	}
	if n := info.NeuronInfo; n != nil {
		for _, d := range n.NeuronDevices {
			dev := awscatalog.Device{Name: deref(d.Name), Count: int64(deref(d.Count))}
			if d.MemoryInfo != nil {
				dev.MemoryMiB = int64(deref(d.MemoryInfo.SizeInMiB))
			}
			if d.CoreInfo != nil {
				dev.CoresPerDevice = int64(deref(d.CoreInfo.Count))
			}
			f.NeuronDevices = append(f.NeuronDevices, dev)
		}
	}
	if a := info.InferenceAcceleratorInfo; a != nil {
		for _, d := range a.Accelerators {
			dev := awscatalog.Device{Name: deref(d.Name), Manufacturer: deref(d.Manufacturer), Count: int64(deref(d.Count))}
			if d.MemoryInfo != nil {
				dev.MemoryMiB = int64(deref(d.MemoryInfo.SizeInMiB))
			}
			f.InferenceAccelerators = append(f.InferenceAccelerators, dev)
		}
	}
	return f, true
}

// archOf maps EC2's architectures to Kubernetes' names; "" for those
// Karpenter does not launch (i386, x86_64_mac, arm64_mac).
func archOf(p *ec2types.ProcessorInfo) string {
	if p == nil {
		return ""
	}
	switch {
	case slices.Contains(p.SupportedArchitectures, ec2types.ArchitectureTypeX8664):
		return "amd64"
	case slices.Contains(p.SupportedArchitectures, ec2types.ArchitectureTypeArm64):
		return "arm64"
	}
	return ""
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

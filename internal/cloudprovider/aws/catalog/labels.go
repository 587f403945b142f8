package awscatalog

import (
	"regexp"
	"strconv"
	"strings"
)

// The karpenter.k8s.aws labels Karpenter's AWS provider derives from an
// instance type (pkg/apis/v1/labels.go there).
const (
	LabelInstanceCategory                  = "karpenter.k8s.aws/instance-category"
	LabelInstanceFamily                    = "karpenter.k8s.aws/instance-family"
	LabelInstanceGeneration                = "karpenter.k8s.aws/instance-generation"
	LabelInstanceSize                      = "karpenter.k8s.aws/instance-size"
	LabelInstanceCapabilityFlex            = "karpenter.k8s.aws/instance-capability-flex"
	LabelInstanceCPU                       = "karpenter.k8s.aws/instance-cpu"
	LabelInstanceCPUManufacturer           = "karpenter.k8s.aws/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMhz = "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                    = "karpenter.k8s.aws/instance-memory"
	LabelInstanceHypervisor                = "karpenter.k8s.aws/instance-hypervisor"
	LabelInstanceEncryptionInTransit       = "karpenter.k8s.aws/instance-encryption-in-transit-supported"
	LabelInstanceEBSBandwidth              = "karpenter.k8s.aws/instance-ebs-bandwidth"
	LabelInstanceNetworkBandwidth          = "karpenter.k8s.aws/instance-network-bandwidth"
	LabelInstanceLocalNVMe                 = "karpenter.k8s.aws/instance-local-nvme"
	LabelInstanceGPUName                   = "karpenter.k8s.aws/instance-gpu-name"
	LabelInstanceGPUManufacturer           = "karpenter.k8s.aws/instance-gpu-manufacturer"
	LabelInstanceGPUCount                  = "karpenter.k8s.aws/instance-gpu-count"
	LabelInstanceGPUMemory                 = "karpenter.k8s.aws/instance-gpu-memory"
	LabelInstanceAcceleratorName           = "karpenter.k8s.aws/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer   = "karpenter.k8s.aws/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount          = "karpenter.k8s.aws/instance-accelerator-count"
)

// InstanceLabels are the labels above, sorted. A type that lacks one does not
// have the label at all, and Karpenter treats that as DoesNotExist, so that
// "instance-gpu-count Gt 0" or "instance-local-nvme Exists" leave such types
// out.
var InstanceLabels = []string{
	LabelInstanceAcceleratorCount,
	LabelInstanceAcceleratorManufacturer,
	LabelInstanceAcceleratorName,
	LabelInstanceCapabilityFlex,
	LabelInstanceCategory,
	LabelInstanceCPU,
	LabelInstanceCPUManufacturer,
	LabelInstanceCPUSustainedClockSpeedMhz,
	LabelInstanceEBSBandwidth,
	LabelInstanceEncryptionInTransit,
	LabelInstanceFamily,
	LabelInstanceGeneration,
	LabelInstanceGPUCount,
	LabelInstanceGPUManufacturer,
	LabelInstanceGPUMemory,
	LabelInstanceGPUName,
	LabelInstanceHypervisor,
	LabelInstanceLocalNVMe,
	LabelInstanceMemory,
	LabelInstanceNetworkBandwidth,
	LabelInstanceSize,
}

// typeNameParts splits a type name the way Karpenter does for category and
// generation: leading letters, an optional "-<n>tb" (u-6tb1), then the
// generation digits, somewhere before the dot.
var typeNameParts = regexp.MustCompile(`^([a-z]+)(-[0-9]+tb)?([0-9]+).*\.`)

// Labels returns the karpenter.k8s.aws labels a node of this type carries,
// with the values Karpenter gives them. Labels that do not apply (a GPU name
// on a type without GPUs, instance-local-nvme without an NVMe store) are left
// out.
func Labels(f TypeFacts) map[string]string {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	l := map[string]string{
		LabelInstanceCPU:                       itoa(f.VCPUs),
		LabelInstanceMemory:                    itoa(f.MemoryMiB),
		LabelInstanceCPUManufacturer:           kebab(f.CPUManufacturer),
		LabelInstanceCPUSustainedClockSpeedMhz: itoa(f.ClockMHz),
		LabelInstanceHypervisor:                f.Hypervisor,
		LabelInstanceEncryptionInTransit:       strconv.FormatBool(f.EncryptionInTransit),
	}
	if m := typeNameParts.FindStringSubmatch(f.Name); m != nil {
		l[LabelInstanceCategory], l[LabelInstanceGeneration] = m[1], m[3]
	}
	family, size, ok := splitName(f.Name)
	if ok {
		l[LabelInstanceFamily], l[LabelInstanceSize] = family, size
	}
	l[LabelInstanceCapabilityFlex] = strconv.FormatBool(strings.Contains(family, "-flex"))
	if f.LocalNVMeGB > 0 {
		l[LabelInstanceLocalNVMe] = itoa(f.LocalNVMeGB)
	}
	if f.NetworkBandwidthMbps > 0 {
		l[LabelInstanceNetworkBandwidth] = itoa(f.NetworkBandwidthMbps)
	}
	if f.EBSBandwidthMbps > 0 {
		l[LabelInstanceEBSBandwidth] = itoa(f.EBSBandwidthMbps)
	}
	// Karpenter labels GPUs and accelerators only when there is one kind.
	if len(f.GPUs) == 1 {
		g := f.GPUs[0]
		l[LabelInstanceGPUName] = kebab(g.Name)
		l[LabelInstanceGPUManufacturer] = kebab(g.Manufacturer)
		l[LabelInstanceGPUCount] = itoa(g.Count)
		l[LabelInstanceGPUMemory] = itoa(g.MemoryMiB)
	}
	switch {
	case len(f.NeuronDevices) == 1:
		d := f.NeuronDevices[0]
		l[LabelInstanceAcceleratorName] = kebab(d.Name)
		l[LabelInstanceAcceleratorManufacturer] = "aws"
		l[LabelInstanceAcceleratorCount] = itoa(d.Count)
	case len(f.NeuronDevices) == 0 && len(f.InferenceAccelerators) == 1:
		a := f.InferenceAccelerators[0]
		l[LabelInstanceAcceleratorName] = kebab(a.Name)
		l[LabelInstanceAcceleratorManufacturer] = kebab(a.Manufacturer)
		l[LabelInstanceAcceleratorCount] = itoa(a.Count)
	}
	return l
}

// splitName splits "m7gd.metal-48xl" into family "m7gd" and size
// "metal-48xl"; ok is false unless there is exactly one dot.
func splitName(name string) (family, size string, ok bool) {
	parts := strings.Split(name, ".")
	if len(parts) != 2 {
		return parts[0], "", false
	}
	return parts[0], parts[1], true
}

// kebab lower-cases a name from EC2 and turns spaces into dashes, as
// Karpenter writes label values ("Radeon Pro V520" -> "radeon-pro-v520").
func kebab(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "-")) }

// Extended resources Karpenter's AWS provider gives nodes.
const (
	ResourceNVIDIAGPU     = "nvidia.com/gpu"
	ResourceAMDGPU        = "amd.com/gpu"
	ResourceHabanaGaudi   = "habana.ai/gaudi"
	ResourceAWSNeuron     = "aws.amazon.com/neuron"
	ResourceAWSNeuronCore = "aws.amazon.com/neuroncore"
	ResourceEFA           = "vpc.amazonaws.com/efa"
	ResourcePrivateIPv4   = "vpc.amazonaws.com/PrivateIPv4Address"
)

// GPU makers as EC2 writes them.
const (
	gpuManufacturerNVIDIA = "NVIDIA"
	gpuManufacturerAMD    = "AMD"
	gpuManufacturerHabana = "Habana"
)

// devices returns each extended resource of the type and its count: GPUs by
// maker, Neuron devices and cores, EFA interfaces.
func devices(f TypeFacts) map[string]int64 {
	out := map[string]int64{}
	for _, g := range f.GPUs {
		switch g.Manufacturer {
		case gpuManufacturerNVIDIA:
			out[ResourceNVIDIAGPU] += g.Count
		case gpuManufacturerAMD:
			out[ResourceAMDGPU] += g.Count
		case gpuManufacturerHabana:
			out[ResourceHabanaGaudi] += g.Count
		}
	}
	for _, d := range f.NeuronDevices {
		out[ResourceAWSNeuron] += d.Count
	}
	// Karpenter counts cores from the first Neuron device kind only.
	if len(f.NeuronDevices) > 0 {
		out[ResourceAWSNeuronCore] = f.NeuronDevices[0].Count * f.NeuronDevices[0].CoresPerDevice
	}
	if f.EFAs > 0 {
		out[ResourceEFA] = f.EFAs
	}
	return out
}

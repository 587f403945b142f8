package aws

import (
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// family is what an AMI family changes about a node's shape, as Karpenter's
// AWS provider has it for each family.
type family struct {
	// eniLimitedMemoryOverhead: kube-reserved memory counts the ENI-limited
	// pod count even when maxPods is set (the EKS AMI's bootstrap does).
	eniLimitedMemoryOverhead bool
	// podsPerCore: the kubelet honours podsPerCore.
	podsPerCore bool
	// eniLimitedPodDensity: max pods defaults to the ENI-limited count; else
	// to 110.
	eniLimitedPodDensity bool
	// ephemeralDevice is the device the kubelet's root directory is on, and
	// ephemeralSize its size when the class does not map that device.
	ephemeralDevice string
	ephemeralSize   resource.Quantity
	// windowsBuild is node.kubernetes.io/windows-build for Windows families,
	// which also run only on amd64.
	windowsBuild string
}

// defaultEBSSize is the volume Karpenter assumes when nothing says more.
var defaultEBSSize = resource.MustParse("20Gi")

// familyOf returns the facts of an AMI family; an unknown or empty family is
// treated as AL2023, the default alias.
func familyOf(name string) family {
	linux := family{eniLimitedMemoryOverhead: true, podsPerCore: true, eniLimitedPodDensity: true,
		ephemeralDevice: "/dev/xvda", ephemeralSize: defaultEBSSize}
	windows := func(build string) family {
		return family{podsPerCore: true, ephemeralDevice: "/dev/sda1", ephemeralSize: resource.MustParse("50Gi"), windowsBuild: build}
	}
	switch name {
	case awsv1.AMIFamilyBottlerocket:
		// Bottlerocket's kubelet reserves by the pods it runs and ignores
		// podsPerCore; its data volume is the second device.
		return family{eniLimitedPodDensity: true, ephemeralDevice: "/dev/xvdb", ephemeralSize: defaultEBSSize}
	case awsv1.AMIFamilyWindows2019:
		return windows("10.0.17763")
	case awsv1.AMIFamilyWindows2022:
		return windows("10.0.20348")
	case awsv1.AMIFamilyWindows2025:
		return windows("10.0.26100")
	case awsv1.AMIFamilyCustom:
		// A custom image's devices are unknown: no default device.
		linux.ephemeralDevice = ""
		return linux
	}
	return linux
}

package v1

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The AMI families spec.amiFamily may name.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
	// AMIFamilyCustom is an image nodewright knows nothing about: the user
	// data is used as written and there are no default block devices.
	AMIFamilyCustom = "Custom"
)

// AliasVersionLatest is the alias version that follows the newest release.
const AliasVersionLatest = "latest"

// aliasFamilies maps an alias's family (the part before "@") to the AMI family.
var aliasFamilies = map[string]string{
	"al2":          AMIFamilyAL2,
	"al2023":       AMIFamilyAL2023,
	"bottlerocket": AMIFamilyBottlerocket,
	"windows2019":  AMIFamilyWindows2019,
	"windows2022":  AMIFamilyWindows2022,
	"windows2025":  AMIFamilyWindows2025,
}

// Alias is an AMI alias split into its parts: al2023@v20240625 is family
// "al2023", version "v20240625".
type Alias struct {
	Family  string
	Version string
}

// Alias returns the alias of the class's AMI selector terms, if a term has one.
// The API server allows an alias only as the only term.
func (in *EC2NodeClass) Alias() (Alias, bool) {
	for _, t := range in.Spec.AMISelectorTerms {
		if t.Alias == "" {
			continue
		}
		family, version, _ := strings.Cut(t.Alias, "@")
		return Alias{Family: family, Version: version}, true
	}
	return Alias{}, false
}

// AMIFamily returns the class's AMI family: spec.amiFamily when set, else the
// family its alias names. It returns "" when neither says, which the API
// server refuses, or for an alias family it does not know.
func (in *EC2NodeClass) AMIFamily() string {
	if in.Spec.AMIFamily != nil {
		return *in.Spec.AMIFamily
	}
	if a, ok := in.Alias(); ok {
		return AMIFamilyFromAlias(a.Family)
	}
	return ""
}

// AMIFamilyFromAlias returns the AMI family of an alias family such as
// "bottlerocket", or "" for one the API server does not allow.
func AMIFamilyFromAlias(family string) string {
	return aliasFamilies[family]
}

// RootVolume returns the block device mapping marked rootVolume, or nil when
// none is (the AMI family's default root device then applies).
func (in *EC2NodeClass) RootVolume() *BlockDeviceMapping {
	for i := range in.Spec.BlockDeviceMappings {
		if in.Spec.BlockDeviceMappings[i].RootVolume {
			return &in.Spec.BlockDeviceMappings[i]
		}
	}
	return nil
}

// RootVolumeSize returns the size of the volume marked rootVolume, and false
// when there is none or it takes its size from a snapshot.
func (in *EC2NodeClass) RootVolumeSize() (resource.Quantity, bool) {
	root := in.RootVolume()
	if root == nil || root.EBS == nil || root.EBS.VolumeSize == nil {
		return resource.Quantity{}, false
	}
	return root.EBS.VolumeSize.DeepCopy(), true
}

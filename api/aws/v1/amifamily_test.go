package v1

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func nodeClass(amiFamily string, terms ...AMISelectorTerm) *EC2NodeClass {
	nc := &EC2NodeClass{Spec: EC2NodeClassSpec{AMISelectorTerms: terms}}
	if amiFamily != "" {
		nc.Spec.AMIFamily = &amiFamily
	}
	return nc
}

func TestAMIFamilyComesFromSpecOrAlias(t *testing.T) {
	cases := []struct {
		name string
		nc   *EC2NodeClass
		want string
	}{
		{"al2 alias", nodeClass("", AMISelectorTerm{Alias: "al2@latest"}), AMIFamilyAL2},
		{"al2023 alias", nodeClass("", AMISelectorTerm{Alias: "al2023@v20240625"}), AMIFamilyAL2023},
		{"bottlerocket alias", nodeClass("", AMISelectorTerm{Alias: "bottlerocket@v1.10.0"}), AMIFamilyBottlerocket},
		{"windows2019 alias", nodeClass("", AMISelectorTerm{Alias: "windows2019@latest"}), AMIFamilyWindows2019},
		{"windows2022 alias", nodeClass("", AMISelectorTerm{Alias: "windows2022@latest"}), AMIFamilyWindows2022},
		{"windows2025 alias", nodeClass("", AMISelectorTerm{Alias: "windows2025@latest"}), AMIFamilyWindows2025},
		{"spec wins over alias", nodeClass(AMIFamilyCustom, AMISelectorTerm{Alias: "bottlerocket@latest"}), AMIFamilyCustom},
		{"spec without alias", nodeClass(AMIFamilyAL2023, AMISelectorTerm{ID: "ami-0123"}), AMIFamilyAL2023},
		{"neither", nodeClass("", AMISelectorTerm{ID: "ami-0123"}), ""},
		{"unknown alias family", nodeClass("", AMISelectorTerm{Alias: "ubuntu@latest"}), ""},
		{"alias family is case sensitive", nodeClass("", AMISelectorTerm{Alias: "AL2@latest"}), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.nc.AMIFamily(); got != tc.want {
				t.Errorf("AMIFamily() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAliasSplitsFamilyAndVersion(t *testing.T) {
	cases := []struct {
		name  string
		terms []AMISelectorTerm
		want  Alias
		ok    bool
	}{
		{"latest", []AMISelectorTerm{{Alias: "al2023@latest"}}, Alias{"al2023", AliasVersionLatest}, true},
		{"pinned", []AMISelectorTerm{{Alias: "bottlerocket@v1.10.0"}}, Alias{"bottlerocket", "v1.10.0"}, true},
		{"version with @", []AMISelectorTerm{{Alias: "al2@v1@2"}}, Alias{"al2", "v1@2"}, true},
		{"no version", []AMISelectorTerm{{Alias: "al2"}}, Alias{"al2", ""}, true},
		{"no alias", []AMISelectorTerm{{ID: "ami-0123"}, {Name: "my-ami"}}, Alias{}, false},
		{"no terms", nil, Alias{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := nodeClass("", tc.terms...).Alias()
			if got != tc.want || ok != tc.ok {
				t.Errorf("Alias() = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestRootVolumeIsTheMarkedMapping(t *testing.T) {
	size := resource.MustParse("100Gi")
	snapshot := "snap-0123"
	cases := []struct {
		name     string
		mappings []BlockDeviceMapping
		device   string // "" when no root volume is expected
		size     string // "" when no size is expected
	}{
		{"none", nil, "", ""},
		{"none marked", []BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), EBS: &BlockDevice{VolumeSize: &size}}}, "", ""},
		{"second marked", []BlockDeviceMapping{
			{DeviceName: ptr.To("/dev/xvda"), EBS: &BlockDevice{VolumeSize: ptr.To(resource.MustParse("20Gi"))}},
			{DeviceName: ptr.To("/dev/xvdb"), EBS: &BlockDevice{VolumeSize: &size}, RootVolume: true},
		}, "/dev/xvdb", "100Gi"},
		{"marked, from a snapshot", []BlockDeviceMapping{
			{DeviceName: ptr.To("/dev/xvda"), EBS: &BlockDevice{SnapshotID: &snapshot}, RootVolume: true},
		}, "/dev/xvda", ""},
		{"marked, no ebs", []BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), RootVolume: true}}, "/dev/xvda", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc := &EC2NodeClass{Spec: EC2NodeClassSpec{BlockDeviceMappings: tc.mappings}}
			root := nc.RootVolume()
			switch {
			case tc.device == "" && root != nil:
				t.Errorf("RootVolume() = %v, want none", *root.DeviceName)
			case tc.device != "" && (root == nil || *root.DeviceName != tc.device):
				t.Errorf("RootVolume() = %v, want %s", root, tc.device)
			}
			got, ok := nc.RootVolumeSize()
			if ok != (tc.size != "") || (ok && got.String() != tc.size) {
				t.Errorf("RootVolumeSize() = %s, %v; want %q", got.String(), ok, tc.size)
			}
		})
	}
}

func TestRootVolumeSizeIsACopy(t *testing.T) {
	size := resource.MustParse("100Gi")
	nc := &EC2NodeClass{Spec: EC2NodeClassSpec{BlockDeviceMappings: []BlockDeviceMapping{
		{EBS: &BlockDevice{VolumeSize: &size}, RootVolume: true},
	}}}
	got, _ := nc.RootVolumeSize()
	got.Add(resource.MustParse("1Gi"))
	if size.String() != "100Gi" {
		t.Errorf("changing the returned size changed the spec to %s", size.String())
	}
}

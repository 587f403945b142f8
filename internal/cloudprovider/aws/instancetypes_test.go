package aws

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/catalog"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

func usEast1(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := awscatalog.Region("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// shape returns the named type as s shapes it.
func shape(t *testing.T, s NodeSettings, name string) *instancetype.InstanceType {
	t.Helper()
	its, err := InstanceTypes(usEast1(t), s)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if it.Name == name {
			return it
		}
	}
	t.Fatalf("%s is not among the %d types", name, len(its))
	return nil
}

func TestR5a8xlargeMemoryArithmeticIsKarpenters(t *testing.T) {
	it := shape(t, SettingsFor(nil), "r5a.8xlarge")
	const want = "262144Mi - 19661Mi (7.5%) - 2829Mi kube-reserved - 100Mi eviction = 239554Mi"
	if got := it.Arithmetic(corev1.ResourceMemory).String(); got != want {
		t.Errorf("memory arithmetic:\n got  %s\n want %s", got, want)
	}
	if got := it.Capacity.Pods().Value(); got != 234 {
		t.Errorf("pods = %d, want 234 (8 ENIs x 29 + 2)", got)
	}
}

func defaults() NodeSettings { return SettingsFor(nil) }

func with(f func(*NodeSettings)) NodeSettings {
	s := defaults()
	f(&s)
	return s
}

// TestShapes checks allocatable per AMI family and kubelet setting against
// the figures Karpenter's formulas give, worked out by hand in each row.
func TestShapes(t *testing.T) {
	cases := []struct {
		name     string
		s        NodeSettings
		typ      string
		resource corev1.ResourceName
		want     string
	}{
		// 2 vCPUs: 60m + 10m; 3 ENIs x (10-1) + 2 = 29 pods.
		{"m5.large cpu", defaults(), "m5.large", corev1.ResourceCPU, "2 - 70m kube-reserved = 1930m"},
		{"m5.large pods", defaults(), "m5.large", corev1.ResourcePods, "29 = 29"},
		// 8192 - ceil(614.4) - (11x29+255) - 100.
		{"m5.large memory", defaults(), "m5.large", corev1.ResourceMemory, "8192Mi - 615Mi (7.5%) - 574Mi kube-reserved - 100Mi eviction = 6903Mi"},
		// 20Gi root volume: 1Gi kube-reserved, 10% (2Gi) eviction.
		{"m5.large storage", defaults(), "m5.large", corev1.ResourceEphemeralStorage, "20480Mi - 1024Mi kube-reserved - 2048Mi eviction = 17408Mi"},
		// 5 vCPUs do not exist; 32 vCPUs: 60+10+10+int(28000 x 0.0025) = 150m.
		{"r5a.8xlarge cpu", defaults(), "r5a.8xlarge", corev1.ResourceCPU, "32 - 150m kube-reserved = 31850m"},
		// maxPods caps pods; kube-reserved memory still counts the ENI-limited 29 on AL2023.
		{"maxPods on AL2023", with(func(s *NodeSettings) { s.MaxPods = ptr.To[int32](20) }), "m5.large", corev1.ResourcePods, "20 = 20"},
		{"maxPods keeps ENI memory on AL2023", with(func(s *NodeSettings) { s.MaxPods = ptr.To[int32](20) }), "m5.large", corev1.ResourceMemory,
			"8192Mi - 615Mi (7.5%) - 574Mi kube-reserved - 100Mi eviction = 6903Mi"},
		// Bottlerocket reserves by the pods it runs: 11x20+255 = 475Mi.
		{"maxPods on Bottlerocket", with(func(s *NodeSettings) { s.AMIFamily = "Bottlerocket"; s.MaxPods = ptr.To[int32](20) }), "m5.large", corev1.ResourceMemory,
			"8192Mi - 615Mi (7.5%) - 475Mi kube-reserved - 100Mi eviction = 7002Mi"},
		// podsPerCore 4 x 2 vCPUs = 8 < 29.
		{"podsPerCore", with(func(s *NodeSettings) { s.PodsPerCore = ptr.To[int32](4) }), "m5.large", corev1.ResourcePods, "8 = 8"},
		{"podsPerCore ignored on Bottlerocket", with(func(s *NodeSettings) { s.AMIFamily = "Bottlerocket"; s.PodsPerCore = ptr.To[int32](4) }), "m5.large", corev1.ResourcePods, "29 = 29"},
		// Windows: 110 pods, no ENI-limited memory: 11x110+255 = 1465Mi; 50Gi C: drive.
		{"Windows pods", with(func(s *NodeSettings) { s.AMIFamily = "Windows2022" }), "m5.large", corev1.ResourcePods, "110 = 110"},
		{"Windows memory", with(func(s *NodeSettings) { s.AMIFamily = "Windows2022" }), "m5.large", corev1.ResourceMemory,
			"8192Mi - 615Mi (7.5%) - 1465Mi kube-reserved - 100Mi eviction = 6012Mi"},
		{"Windows storage", with(func(s *NodeSettings) { s.AMIFamily = "Windows2019" }), "m5.large", corev1.ResourceEphemeralStorage,
			"51200Mi - 1024Mi kube-reserved - 5120Mi eviction = 45056Mi"},
		// Overrides replace the computed figures.
		{"kubeReserved and systemReserved", with(func(s *NodeSettings) {
			s.KubeReserved = map[string]string{"cpu": "200m", "memory": "1Gi"}
			s.SystemReserved = map[string]string{"cpu": "100m", "memory": "500Mi", "pid": "1000"}
		}), "m5.large", corev1.ResourceMemory, "8192Mi - 615Mi (7.5%) - 1024Mi kube-reserved - 500Mi system-reserved - 100Mi eviction = 5953Mi"},
		{"kubeReserved cpu", with(func(s *NodeSettings) { s.KubeReserved = map[string]string{"cpu": "200m"} }), "m5.large", corev1.ResourceCPU,
			"2 - 200m kube-reserved = 1800m"},
		// evictionHard 5% of the memory after VM overhead: ceil(7577Mi x 5%) = 378.85Mi.
		{"evictionHard percent", with(func(s *NodeSettings) { s.EvictionHard = map[string]string{"memory.available": "5%"} }), "m5.large", corev1.ResourceMemory,
			"8192Mi - 615Mi (7.5%) - 574Mi kube-reserved - 378.9Mi eviction = 6624.1Mi"},
		{"evictionHard quantity", with(func(s *NodeSettings) {
			s.EvictionHard = map[string]string{"memory.available": "1Gi", "nodefs.available": "100%"}
		}), "m5.large", corev1.ResourceEphemeralStorage,
			"20480Mi - 1024Mi kube-reserved = 19456Mi"},
		// Block devices: the root volume, else the family's device.
		{"rootVolume", with(func(s *NodeSettings) {
			s.BlockDevices = []awsv1.BlockDeviceMapping{
				{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("20Gi"))}},
				{DeviceName: ptr.To("/dev/xvdc"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("100Gi"))}, RootVolume: true},
			}
		}), "m5.large", corev1.ResourceEphemeralStorage, "102400Mi - 1024Mi kube-reserved - 10240Mi eviction = 91136Mi"},
		{"Bottlerocket data volume", with(func(s *NodeSettings) {
			s.AMIFamily = "Bottlerocket"
			s.BlockDevices = []awsv1.BlockDeviceMapping{
				{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("4Gi"))}},
				{DeviceName: ptr.To("/dev/xvdb"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("80Gi"))}},
			}
		}), "m5.large", corev1.ResourceEphemeralStorage, "81920Mi - 1024Mi kube-reserved - 8192Mi eviction = 72704Mi"},
		{"Custom takes the last volume", with(func(s *NodeSettings) {
			s.AMIFamily = "Custom"
			s.BlockDevices = []awsv1.BlockDeviceMapping{
				{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("30Gi"))}},
				{DeviceName: ptr.To("/dev/xvdz"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("40Gi"))}},
			}
		}), "m5.large", corev1.ResourceEphemeralStorage, "40960Mi - 1024Mi kube-reserved - 4096Mi eviction = 35840Mi"},
		// RAID0: the NVMe disks, 300 GB (not GiB) on m5d.2xlarge.
		{"RAID0 instance store", with(func(s *NodeSettings) { s.InstanceStorePolicy = "RAID0" }), "m5d.2xlarge", corev1.ResourceEphemeralStorage,
			"286102.3Mi - 1024Mi kube-reserved - 28610.2Mi eviction = 256468.1Mi"},
		// Graviton keeps 64Mi: 8192-64 = 8128; ceil(609.6) = 610.
		{"arm64 CMA", defaults(), "m6g.large", corev1.ResourceMemory, "8128Mi - 610Mi (7.5%) - 574Mi kube-reserved - 100Mi eviction = 6844Mi"},
		// Accelerators.
		{"g5.xlarge GPU", defaults(), "g5.xlarge", "nvidia.com/gpu", "1 = 1"},
		{"inf2.xlarge neuron", defaults(), "inf2.xlarge", "aws.amazon.com/neuron", "1 = 1"},
		{"inf2.xlarge neuron cores", defaults(), "inf2.xlarge", "aws.amazon.com/neuroncore", "2 = 2"},
		{"g4ad.xlarge AMD GPU", defaults(), "g4ad.xlarge", "amd.com/gpu", "1 = 1"},
		{"Windows private IPv4", with(func(s *NodeSettings) { s.AMIFamily = "Windows2022" }), "m5.large", ResourcePrivateIPv4, "9 = 9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it := shape(t, tc.s, tc.typ)
			if _, ok := it.Capacity[tc.resource]; !ok {
				t.Fatalf("%s has no %s capacity: %v", tc.typ, tc.resource, it.Capacity)
			}
			if got := it.Arithmetic(tc.resource).String(); got != tc.want {
				t.Errorf("%s %s:\n got  %s\n want %s", tc.typ, tc.resource, got, tc.want)
			}
		})
	}
}

func TestRequirements(t *testing.T) {
	get := func(it *instancetype.InstanceType, key string) string { return it.Requirements.Get(key).String() }
	g5 := shape(t, defaults(), "g5.xlarge")
	m5 := shape(t, defaults(), "m5.large")
	for _, tc := range []struct {
		it   *instancetype.InstanceType
		key  string
		want string
	}{
		{g5, "karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-name In [a10g]"},
		{g5, "karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-gpu-manufacturer In [nvidia]"},
		{g5, "karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-gpu-count In [1]"},
		{g5, "karpenter.k8s.aws/instance-local-nvme", "karpenter.k8s.aws/instance-local-nvme In [250]"},
		{m5, "karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-gpu-count DoesNotExist"},
		{m5, "karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-category In [m]"},
		{m5, "karpenter.k8s.aws/instance-generation", "karpenter.k8s.aws/instance-generation In [5]"},
		{m5, "karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-family In [m5]"},
		{m5, "karpenter.k8s.aws/instance-size", "karpenter.k8s.aws/instance-size In [large]"},
		{m5, "karpenter.k8s.aws/instance-cpu-manufacturer", "karpenter.k8s.aws/instance-cpu-manufacturer In [intel]"},
		{m5, "karpenter.k8s.aws/instance-hypervisor", "karpenter.k8s.aws/instance-hypervisor In [nitro]"},
		{m5, "topology.kubernetes.io/region", "topology.kubernetes.io/region In [us-east-1]"},
		{m5, "node.kubernetes.io/windows-build", "node.kubernetes.io/windows-build DoesNotExist"},
		{m5, "kubernetes.io/os", "kubernetes.io/os In [linux]"},
		{m5, "karpenter.sh/capacity-type", "karpenter.sh/capacity-type In [on-demand spot]"},
	} {
		if got := get(tc.it, tc.key); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.it.Name, got, tc.want)
		}
	}
	// A NodePool asking for GPUs leaves m5 out and keeps g5.
	gpu := scheduling.NewRequirements(scheduling.NewRequirement("karpenter.k8s.aws/instance-gpu-count", corev1.NodeSelectorOpGt, "0"))
	if m5.Requirements.Compatible(gpu) == nil {
		t.Error("m5.large meets instance-gpu-count Gt 0")
	}
	if err := g5.Requirements.Compatible(gpu); err != nil {
		t.Errorf("g5.xlarge does not meet instance-gpu-count Gt 0: %v", err)
	}
}

func TestWindowsLeavesOutArm64(t *testing.T) {
	its, err := InstanceTypes(usEast1(t), with(func(s *NodeSettings) { s.AMIFamily = "Windows2025" }))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if it.Requirements.Get(corev1.LabelArchStable).Has("arm64") {
			t.Fatalf("%s (arm64) offered to Windows", it.Name)
		}
		if got := it.Requirements.Get(corev1.LabelWindowsBuild).String(); got != "node.kubernetes.io/windows-build In [10.0.26100]" {
			t.Fatalf("%s: %s", it.Name, got)
		}
	}
}

func TestZonesOfTheSubnets(t *testing.T) {
	class := &awsv1.EC2NodeClass{Status: awsv1.EC2NodeClassStatus{Subnets: []awsv1.Subnet{{ID: "subnet-1", Zone: "us-east-1b"}}}}
	it := shape(t, SettingsFor(class), "m5.large")
	for _, o := range it.Offerings {
		if o.Zone != "us-east-1b" {
			t.Fatalf("offering in %s, want only us-east-1b", o.Zone)
		}
	}
	id := usEast1(t).ZoneIDs["us-east-1b"]
	if got, want := it.Requirements.Get(LabelZoneID).String(), "topology.k8s.aws/zone-id In ["+id+"]"; id == "" || got != want {
		t.Errorf("zone-id requirement %s, want %s", got, want)
	}
	// The subnet's own zone ID wins over the catalog's.
	class.Status.Subnets[0].ZoneID = "use1-az9"
	it = shape(t, SettingsFor(class), "m5.large")
	if got := it.Requirements.Get(LabelZoneID).String(); got != "topology.k8s.aws/zone-id In [use1-az9]" {
		t.Errorf("zone-id requirement %s, want the subnet's use1-az9", got)
	}
}

func TestBadSettingsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		s    NodeSettings
		want string
	}{
		{with(func(s *NodeSettings) { s.KubeReserved = map[string]string{"memory": "lots"} }), "kubelet.kubeReserved[memory]"},
		{with(func(s *NodeSettings) { s.SystemReserved = map[string]string{"cpu": "x"} }), "kubelet.systemReserved[cpu]"},
		{with(func(s *NodeSettings) { s.EvictionHard = map[string]string{"memory.available": "five%"} }), "kubelet.evictionHard[memory.available]"},
	} {
		_, err := InstanceTypes(usEast1(t), tc.s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one naming %s", err, tc.want)
		}
	}
}

func TestSettingsFor(t *testing.T) {
	class := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
		AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}},
		Kubelet:          &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](50)},
	}}
	s := SettingsFor(class)
	if s.AMIFamily != "Bottlerocket" || s.MaxPods == nil || *s.MaxPods != 50 || s.VMMemoryOverheadPercent != 0.075 {
		t.Errorf("SettingsFor = %+v", s)
	}
	if got := SettingsFor(nil).AMIFamily; got != "AL2023" {
		t.Errorf("nil class family %q, want AL2023", got)
	}
}

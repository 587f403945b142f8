package aws

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

func TestCapacityErrorCodes(t *testing.T) {
	for code, want := range map[string]bool{
		"InsufficientInstanceCapacity":      true,
		"InsufficientCapacity":              true,
		"MaxSpotInstanceCountExceeded":      true,
		"UnfulfillableCapacity":             true,
		"Unsupported":                       true,
		"InsufficientFreeAddressesInSubnet": true,
		"SpotMaxPriceTooLow":                true,
		"":                                  false,
		"UnauthorizedOperation":             false,
		"InvalidParameterValue":             false,
		"InvalidLaunchTemplateId.NotFound":  false,
		"insufficientinstancecapacity":      false, // codes are case-sensitive
	} {
		if got := capacityError(code); got != want {
			t.Errorf("capacityError(%q) = %v, want %v", code, got, want)
		}
	}
}

func TestKubeletLabelsKeepOnlyWhatNodeRestrictionAllows(t *testing.T) {
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		// allowed
		"kubernetes.io/arch":                "arm64",
		"kubernetes.io/os":                  "linux",
		"node.kubernetes.io/instance-type":  "m6g.large",
		"topology.kubernetes.io/region":     "us-east-1",
		"topology.kubernetes.io/zone":       "us-east-1a",
		"kubelet.kubernetes.io/anything":    "x",
		"node.kubernetes.io/lifecycle":      "spot",
		"karpenter.sh/nodepool":             "default",
		"karpenter.k8s.aws/instance-family": "m6g",
		"team":                              "web",
		"example.com/kubernetes.io":         "not a restricted domain",
		"notkubernetes.io/x":                "a different domain",
		// dropped
		"kubernetes.io/hostname":                 "ip-10-0-0-1",
		"node-role.kubernetes.io/worker":         "",
		"kubernetes.io/custom":                   "x",
		"k8s.io/x":                               "y",
		"sub.k8s.io/x":                           "y",
		"topology.kubernetes.io/other":           "z",
		"beta.kubernetes.io/not-on-the-list-yet": "z",
	}}}
	want := map[string]string{
		"kubernetes.io/arch":                "arm64",
		"kubernetes.io/os":                  "linux",
		"node.kubernetes.io/instance-type":  "m6g.large",
		"topology.kubernetes.io/region":     "us-east-1",
		"topology.kubernetes.io/zone":       "us-east-1a",
		"kubelet.kubernetes.io/anything":    "x",
		"node.kubernetes.io/lifecycle":      "spot",
		"karpenter.sh/nodepool":             "default",
		"karpenter.k8s.aws/instance-family": "m6g",
		"team":                              "web",
		"example.com/kubernetes.io":         "not a restricted domain",
		"notkubernetes.io/x":                "a different domain",
	}
	got := kubeletLabels(claim)
	for k := range claim.Labels {
		g, kept := got[k]
		w, wantKept := want[k]
		if kept != wantKept || g != w {
			t.Errorf("label %s: kept=%v (%q), want kept=%v (%q)", k, kept, g, wantKept, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("kubeletLabels = %v, want %v", got, want)
	}
}

func TestParseProviderID(t *testing.T) {
	for _, tc := range []struct {
		id, want string
		ok       bool
	}{
		{"aws:///us-east-1a/i-0123456789abcdef0", "i-0123456789abcdef0", true},
		{"aws:///us-west-2b/i-1", "i-1", true},
		{"", "", false},
		{"aws://us-east-1a/i-1", "", false},
		{"aws:///i-1", "", false},
		{"aws:///us-east-1a/", "", false},
		{"aws:///us-east-1a/vol-1", "", false},
		{"kind://docker/kind/node", "", false},
		{ProviderID("us-east-1c", "i-abc"), "i-abc", true},
	} {
		got, err := parseProviderID(tc.id)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseProviderID(%q) = %q, %v; want %q, ok=%v", tc.id, got, err, tc.want, tc.ok)
		}
	}
}

func hashClass() *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "NodeRole",
			Tags:                       map[string]string{"team": "web"},
		},
	}
}

func TestNodeClassHashFollowsWhatShapesInstances(t *testing.T) {
	base := NodeClassHash(hashClass())
	if again := NodeClassHash(hashClass()); again != base {
		t.Fatalf("hash of the same class differs: %s, %s", base, again)
	}
	for _, tc := range []struct {
		name    string
		change  func(*awsv1.EC2NodeClass)
		changes bool
	}{
		{"kubelet", func(c *awsv1.EC2NodeClass) { c.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: aws.Int32(20)} }, true},
		{"userData", func(c *awsv1.EC2NodeClass) { c.Spec.UserData = aws.String("#!/bin/bash\necho hi") }, true},
		{"tags", func(c *awsv1.EC2NodeClass) { c.Spec.Tags["team"] = "db" }, true},
		{"blockDeviceMappings", func(c *awsv1.EC2NodeClass) {
			c.Spec.BlockDeviceMappings = []awsv1.BlockDeviceMapping{{DeviceName: aws.String("/dev/xvda"),
				EBS: &awsv1.BlockDevice{VolumeSize: resourcePtr("100Gi")}}}
		}, true},
		{"subnet terms", func(c *awsv1.EC2NodeClass) { c.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-1"}} }, false},
		{"security group terms", func(c *awsv1.EC2NodeClass) {
			c.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "web"}}
		}, false},
		{"AMI terms", func(c *awsv1.EC2NodeClass) {
			c.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@v20240807"}}
		}, false},
		{"capacity reservation terms", func(c *awsv1.EC2NodeClass) {
			c.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-1"}}
		}, false},
		{"status", func(c *awsv1.EC2NodeClass) { c.Status.Subnets = []awsv1.Subnet{{ID: "subnet-9"}} }, false},
		{"labels", func(c *awsv1.EC2NodeClass) { c.Labels = map[string]string{"a": "b"} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hashClass()
			tc.change(c)
			if got := NodeClassHash(c); (got != base) != tc.changes {
				t.Errorf("hash changed=%v, want %v", got != base, tc.changes)
			}
		})
	}
}

func resourcePtr(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// device renders a block device mapping request as "device size type enc".
func device(m ec2types.LaunchTemplateBlockDeviceMappingRequest) string {
	s := aws.ToString(m.DeviceName)
	if e := m.Ebs; e != nil {
		s += fmt.Sprintf(" %dGi %s", aws.ToInt32(e.VolumeSize), e.VolumeType)
		if aws.ToBool(e.Encrypted) {
			s += " encrypted"
		}
		if aws.ToBool(e.DeleteOnTermination) {
			s += " delete"
		}
	}
	return s
}

func devices(ms []ec2types.LaunchTemplateBlockDeviceMappingRequest) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, device(m))
	}
	return out
}

func TestBlockDevicesDefaultPerFamily(t *testing.T) {
	for _, tc := range []struct {
		family string
		want   []string
	}{
		{awsv1.AMIFamilyAL2023, []string{"/dev/xvda 20Gi gp3 encrypted delete"}},
		{awsv1.AMIFamilyAL2, []string{"/dev/xvda 20Gi gp3 encrypted delete"}},
		{awsv1.AMIFamilyBottlerocket, []string{"/dev/xvda 4Gi gp3 encrypted delete", "/dev/xvdb 20Gi gp3 encrypted delete"}},
		{awsv1.AMIFamilyWindows2022, []string{"/dev/sda1 50Gi gp3 encrypted delete"}},
		{awsv1.AMIFamilyWindows2019, []string{"/dev/sda1 50Gi gp3 encrypted delete"}},
		{awsv1.AMIFamilyCustom, []string{}},
	} {
		t.Run(tc.family, func(t *testing.T) {
			if got := devices(blockDevices(&awsv1.EC2NodeClass{}, tc.family)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("blockDevices = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBlockDevicesTranslateTheClasssMappings(t *testing.T) {
	class := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{BlockDeviceMappings: []awsv1.BlockDeviceMapping{
		{DeviceName: aws.String("/dev/xvda"), RootVolume: true, EBS: &awsv1.BlockDevice{
			VolumeSize: resourcePtr("100Gi"), VolumeType: aws.String("gp3"), IOPS: aws.Int64(4000), Throughput: aws.Int64(250),
			Encrypted: aws.Bool(true), KMSKeyID: aws.String("alias/ebs"), DeleteOnTermination: aws.Bool(false)}},
		{DeviceName: aws.String("/dev/xvdb"), EBS: &awsv1.BlockDevice{VolumeSize: resourcePtr("20G")}},   // 18.6Gi
		{DeviceName: aws.String("/dev/xvdc"), EBS: &awsv1.BlockDevice{VolumeSize: resourcePtr("1.5Gi")}}, // 1.5Gi
		{DeviceName: aws.String("/dev/xvdd"), EBS: &awsv1.BlockDevice{SnapshotID: aws.String("snap-1"), VolumeInitializationRate: aws.Int32(300)}},
		{DeviceName: aws.String("/dev/xvde")},
	}}}
	// The class's mappings replace the family's defaults, Custom included.
	for _, family := range []string{awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyCustom} {
		got := blockDevices(class, family)
		if len(got) != 5 {
			t.Fatalf("%s: %d mappings, want the class's 5", family, len(got))
		}
		root := got[0].Ebs
		if aws.ToString(got[0].DeviceName) != "/dev/xvda" || aws.ToInt32(root.VolumeSize) != 100 || root.VolumeType != ec2types.VolumeTypeGp3 ||
			aws.ToInt32(root.Iops) != 4000 || aws.ToInt32(root.Throughput) != 250 || !aws.ToBool(root.Encrypted) ||
			aws.ToString(root.KmsKeyId) != "alias/ebs" || root.DeleteOnTermination == nil || *root.DeleteOnTermination {
			t.Errorf("%s: root mapping %s %+v does not carry the class's fields", family, device(got[0]), *root)
		}
		if v := aws.ToInt32(got[1].Ebs.VolumeSize); v != 19 {
			t.Errorf("%s: 20G is %dGi, want 19 (rounded up)", family, v)
		}
		if v := aws.ToInt32(got[2].Ebs.VolumeSize); v != 2 {
			t.Errorf("%s: 1.5Gi is %dGi, want 2 (rounded up)", family, v)
		}
		snap := got[3].Ebs
		if snap.VolumeSize != nil || aws.ToString(snap.SnapshotId) != "snap-1" || aws.ToInt32(snap.VolumeInitializationRate) != 300 || snap.VolumeType != "" {
			t.Errorf("%s: snapshot mapping %+v, want the snapshot alone (no size, no type)", family, *snap)
		}
		if got[4].Ebs != nil || aws.ToString(got[4].DeviceName) != "/dev/xvde" {
			t.Errorf("%s: mapping without EBS became %s", family, device(got[4]))
		}
	}
}

// candidateTypes are instance types named t0..t{n-1}, each with a spot and
// an on-demand offering in zones a and b, priced so that t0 is cheapest.
func candidateTypes(n int) []*instancetype.InstanceType {
	var out []*instancetype.InstanceType
	for i := range n {
		name := fmt.Sprintf("t%03d", i)
		it := &instancetype.InstanceType{
			Name:         name,
			Requirements: scheduling.FromLabels(map[string]string{corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: "amd64"}),
			Capacity:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		}
		for _, zone := range []string{"us-east-1a", "us-east-1b"} {
			it.Offerings = append(it.Offerings,
				instancetype.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: 1 + float64(i), Available: true},
				instancetype.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeSpot, Price: 0.5 + float64(i), Available: true})
		}
		out = append(out, it)
	}
	return out
}

func claimAllowing(capacityTypes ...string) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{
		NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: capacityTypes}}}}}
}

func candidateClass(zones ...string) *awsv1.EC2NodeClass {
	class := &awsv1.EC2NodeClass{}
	for i, z := range zones {
		class.Status.Subnets = append(class.Status.Subnets, awsv1.Subnet{ID: fmt.Sprintf("subnet-%d", i), Zone: z})
	}
	return class
}

func candidateIDs(cs []candidate) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s/%s/%s@%s", c.it.Name, c.offering.Zone, c.offering.CapacityType, c.subnet))
	}
	return out
}

func testProvider() *Provider {
	return &Provider{ice: cloudprovider.NewUnavailable(clock.RealClock{}, InsufficientCapacityTTL)}
}

func TestCandidatesChooseSpotWhenAllowedCheapestFirst(t *testing.T) {
	types := candidateTypes(2)
	class := candidateClass("us-east-1a", "us-east-1b")
	got := candidateIDs(testProvider().candidates(claimAllowing("spot", "on-demand"), class, types, nil))
	want := []string{"t000/us-east-1a/spot@subnet-0", "t000/us-east-1b/spot@subnet-1", "t001/us-east-1a/spot@subnet-0", "t001/us-east-1b/spot@subnet-1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
	got = candidateIDs(testProvider().candidates(claimAllowing("on-demand"), class, types, nil))
	want = []string{"t000/us-east-1a/on-demand@subnet-0", "t000/us-east-1b/on-demand@subnet-1", "t001/us-east-1a/on-demand@subnet-0", "t001/us-east-1b/on-demand@subnet-1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("on-demand only: candidates %v, want %v", got, want)
	}
}

func TestCandidatesLeaveOutZonesWithoutSubnetAndOfferingsShortOfCapacity(t *testing.T) {
	types := candidateTypes(2)
	p := testProvider()
	p.ice.Add(cloudprovider.Offering{InstanceType: "t000", Zone: "us-east-1a", CapacityType: karpv1.CapacityTypeSpot})
	got := candidateIDs(p.candidates(claimAllowing("spot", "on-demand"), candidateClass("us-east-1a"), types, nil))
	want := []string{"t001/us-east-1a/spot@subnet-0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
	// With every spot offering short, on-demand is next.
	p.ice.Add(cloudprovider.Offering{InstanceType: "t001", Zone: "us-east-1a", CapacityType: karpv1.CapacityTypeSpot})
	got = candidateIDs(p.candidates(claimAllowing("spot", "on-demand"), candidateClass("us-east-1a"), types, nil))
	want = []string{"t000/us-east-1a/on-demand@subnet-0", "t001/us-east-1a/on-demand@subnet-0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spot short: candidates %v, want %v", got, want)
	}
}

func TestCandidatesTieBreakByNameThenZone(t *testing.T) {
	types := candidateTypes(2)
	for _, it := range types {
		for i := range it.Offerings {
			it.Offerings[i].Price = 1
		}
	}
	// The subnets list zone b first; ordering must not follow it.
	got := candidateIDs(testProvider().candidates(claimAllowing("on-demand"), candidateClass("us-east-1b", "us-east-1a"), types, nil))
	want := []string{"t000/us-east-1a/on-demand@subnet-1", "t000/us-east-1b/on-demand@subnet-0", "t001/us-east-1a/on-demand@subnet-1", "t001/us-east-1b/on-demand@subnet-0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
}

func TestCandidatesKeepAtMostSixtyTypes(t *testing.T) {
	types := candidateTypes(maxFleetTypes + 10)
	got := testProvider().candidates(claimAllowing("spot"), candidateClass("us-east-1a", "us-east-1b"), types, nil)
	names := map[string]int{}
	for _, c := range got {
		names[c.it.Name]++
	}
	if len(names) != maxFleetTypes {
		t.Errorf("%d types offered, want %d", len(names), maxFleetTypes)
	}
	for name, n := range names {
		if n != 2 {
			t.Errorf("%s has %d offerings, want both zones'", name, n)
		}
	}
	if last := got[len(got)-1].it.Name; last != fmt.Sprintf("t%03d", maxFleetTypes-1) {
		t.Errorf("last type %s, want the 60th cheapest", last)
	}
}

func TestCandidatesFitTheClaimsRequests(t *testing.T) {
	types := candidateTypes(2)
	types[0].Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	claim := claimAllowing("on-demand")
	claim.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}
	got := candidateIDs(testProvider().candidates(claim, candidateClass("us-east-1a"), types, nil))
	if want := []string{"t001/us-east-1a/on-demand@subnet-0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("candidates %v, want %v (t000 is too small)", got, want)
	}
}

// Fit and price are judged on the view (a NodeOverlay, learned capacity),
// as the solver judged them, and the launched type is the catalog's: with
// the bare catalog a claim an overlay made fit would be refused, deleted and
// planned again, forever.
func TestCandidatesJudgeTheView(t *testing.T) {
	types := candidateTypes(2)
	types[0].Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	claim := claimAllowing("on-demand")
	claim.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}
	viewed := []*instancetype.InstanceType{{}, types[1]}
	*viewed[0] = *types[0]
	viewed[0].Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	viewed[0].Offerings = append(instancetype.Offerings(nil), types[0].Offerings...)
	for i := range viewed[0].Offerings {
		viewed[0].Offerings[i].Price = 1000 // dearer than t001's
	}
	got := testProvider().candidates(claim, candidateClass("us-east-1a"), types, viewed)
	if want := []string{"t001/us-east-1a/on-demand@subnet-0", "t000/us-east-1a/on-demand@subnet-0"}; !reflect.DeepEqual(candidateIDs(got), want) {
		t.Fatalf("candidates %v, want %v (t000 fits by the view, at the view's price)", candidateIDs(got), want)
	}
	if got[1].it != types[0] {
		t.Error("the candidate is the view's copy of t000; the machine launched must be the catalog's")
	}
}

// TestParseProviderIDStrict: both the zone and a bare instance ID are
// required.
func TestParseProviderIDStrict(t *testing.T) {
	for _, id := range []string{"aws:////i-1", "aws:///us-east-1a/i-1/extra", "aws:///us-east-1a/", "aws:///us-east-1a"} {
		if got, err := parseProviderID(id); err == nil {
			t.Errorf("parseProviderID(%q) = %q, want an error", id, got)
		}
	}
}

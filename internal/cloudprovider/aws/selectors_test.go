package aws

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// netFake is an EC2Network that records the filters of each call and
// answers the i-th call of each kind with the i-th canned list.
type netFake struct {
	subnets    [][]ec2types.Subnet
	groups     [][]ec2types.SecurityGroup
	subnetErrs map[int]error // by call index
	groupErrs  map[int]error

	subnetCalls [][]ec2types.Filter
	groupCalls  [][]ec2types.Filter
}

func (f *netFake) DescribeSubnets(_ context.Context, in *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	i := len(f.subnetCalls)
	f.subnetCalls = append(f.subnetCalls, in.Filters)
	if err := f.subnetErrs[i]; err != nil {
		return nil, err
	}
	out := &ec2.DescribeSubnetsOutput{}
	if i < len(f.subnets) {
		out.Subnets = f.subnets[i]
	}
	return out, nil
}

func (f *netFake) DescribeSecurityGroups(_ context.Context, in *ec2.DescribeSecurityGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error) {
	i := len(f.groupCalls)
	f.groupCalls = append(f.groupCalls, in.Filters)
	if err := f.groupErrs[i]; err != nil {
		return nil, err
	}
	out := &ec2.DescribeSecurityGroupsOutput{}
	if i < len(f.groups) {
		out.SecurityGroups = f.groups[i]
	}
	return out, nil
}

func ec2Subnet(id, zone, zoneID string, free int32) ec2types.Subnet {
	return ec2types.Subnet{SubnetId: aws.String(id), AvailabilityZone: aws.String(zone),
		AvailabilityZoneId: aws.String(zoneID), AvailableIpAddressCount: aws.Int32(free)}
}

func ec2Group(id, name string) ec2types.SecurityGroup {
	return ec2types.SecurityGroup{GroupId: aws.String(id), GroupName: aws.String(name)}
}

// filterStrings renders filters as "name=v1,v2" for comparison.
func filterStrings(fs []ec2types.Filter) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, aws.ToString(f.Name)+"="+strings.Join(f.Values, ","))
	}
	return out
}

func TestTagFiltersTurnStarIntoTagKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		tags map[string]string
		want []string
	}{
		{"none", nil, []string{}},
		{"value", map[string]string{"env": "prod"}, []string{"tag:env=prod"}},
		{"star asks only that the tag exists", map[string]string{"kubernetes.io/role/elb": "*"}, []string{"tag-key=kubernetes.io/role/elb"}},
		{"sorted by key", map[string]string{"b": "*", "a": "1", "c": "x*"}, []string{"tag:a=1", "tag-key=b", "tag:c=x*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := filterStrings(tagFilters(tc.tags)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tagFilters(%v) = %v, want %v", tc.tags, got, tc.want)
			}
		})
	}
}

func TestSubnetsOrTheTermsAndSortByFreeAddresses(t *testing.T) {
	api := &netFake{subnets: [][]ec2types.Subnet{
		{ec2Subnet("subnet-1", "us-east-1a", "use1-az1", 10), ec2Subnet("subnet-2", "us-east-1b", "use1-az2", 50)},
		{ec2Subnet("subnet-3", "us-east-1a", "use1-az1", 50), ec2Subnet("subnet-1", "us-east-1a", "use1-az1", 10)},
		{ec2Subnet("subnet-0", "us-east-1c", "use1-az3", 5)},
	}}
	terms := []awsv1.SubnetSelectorTerm{
		{Tags: map[string]string{"karpenter.sh/discovery": "demo", "kubernetes.io/role/internal-elb": "*"}},
		{ID: "subnet-3"},
		{ID: "subnet-0", Tags: map[string]string{"env": "prod"}},
	}
	got, err := Subnets(context.Background(), api, terms)
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := [][]string{
		{"tag:karpenter.sh/discovery=demo", "tag-key=kubernetes.io/role/internal-elb"},
		{"subnet-id=subnet-3"},
		{"tag:env=prod", "subnet-id=subnet-0"},
	}
	if len(api.subnetCalls) != len(wantCalls) {
		t.Fatalf("%d DescribeSubnets calls, want one per term (%d)", len(api.subnetCalls), len(wantCalls))
	}
	for i, want := range wantCalls {
		if f := filterStrings(api.subnetCalls[i]); !reflect.DeepEqual(f, want) {
			t.Errorf("term %d: filters %v, want %v", i, f, want)
		}
	}
	want := []awsv1.Subnet{
		{ID: "subnet-2", Zone: "us-east-1b", ZoneID: "use1-az2"}, // 50 free, ID before subnet-3
		{ID: "subnet-3", Zone: "us-east-1a", ZoneID: "use1-az1"}, // 50 free
		{ID: "subnet-1", Zone: "us-east-1a", ZoneID: "use1-az1"}, // 10 free, found by two terms, listed once
		{ID: "subnet-0", Zone: "us-east-1c", ZoneID: "use1-az3"}, // 5 free
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Subnets = %+v\nwant %+v", got, want)
	}
}

func TestSecurityGroupsOrTheTermsAndSortByID(t *testing.T) {
	api := &netFake{groups: [][]ec2types.SecurityGroup{
		{ec2Group("sg-3", "nodes"), ec2Group("sg-1", "default")},
		{ec2Group("sg-2", "web")},
		{ec2Group("sg-1", "default")},
	}}
	terms := []awsv1.SecurityGroupSelectorTerm{
		{Tags: map[string]string{"karpenter.sh/discovery": "*"}},
		{ID: "sg-2"},
		{Name: "default", Tags: map[string]string{"team": "a"}},
	}
	got, err := SecurityGroups(context.Background(), api, terms)
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := [][]string{
		{"tag-key=karpenter.sh/discovery"},
		{"group-id=sg-2"},
		{"tag:team=a", "group-name=default"},
	}
	if len(api.groupCalls) != len(wantCalls) {
		t.Fatalf("%d DescribeSecurityGroups calls, want one per term (%d)", len(api.groupCalls), len(wantCalls))
	}
	for i, want := range wantCalls {
		if f := filterStrings(api.groupCalls[i]); !reflect.DeepEqual(f, want) {
			t.Errorf("term %d: filters %v, want %v", i, f, want)
		}
	}
	want := []awsv1.SecurityGroup{{ID: "sg-1", Name: "default"}, {ID: "sg-2", Name: "web"}, {ID: "sg-3", Name: "nodes"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SecurityGroups = %+v, want %+v", got, want)
	}
}

func TestSelectorErrorsNameTheTerm(t *testing.T) {
	boom := errors.New("throttled")
	t.Run("subnets", func(t *testing.T) {
		api := &netFake{subnets: [][]ec2types.Subnet{{ec2Subnet("subnet-1", "us-east-1a", "use1-az1", 1)}},
			subnetErrs: map[int]error{1: boom}}
		_, err := Subnets(context.Background(), api, []awsv1.SubnetSelectorTerm{{ID: "subnet-1"}, {ID: "subnet-2"}})
		if err == nil || !strings.Contains(err.Error(), "spec.subnetSelectorTerms[1]") || !errors.Is(err, boom) {
			t.Errorf("error %v must name spec.subnetSelectorTerms[1] and wrap AWS's", err)
		}
	})
	t.Run("security groups", func(t *testing.T) {
		api := &netFake{groupErrs: map[int]error{1: boom}}
		_, err := SecurityGroups(context.Background(), api, []awsv1.SecurityGroupSelectorTerm{{ID: "sg-1"}, {Name: "web"}})
		if err == nil || !strings.Contains(err.Error(), "spec.securityGroupSelectorTerms[1]") || !errors.Is(err, boom) {
			t.Errorf("error %v must name spec.securityGroupSelectorTerms[1] and wrap AWS's", err)
		}
	})
}

func TestSubnetsFollowPages(t *testing.T) {
	api := &pagedSubnets{pages: map[string]ec2.DescribeSubnetsOutput{
		"":   {Subnets: []ec2types.Subnet{ec2Subnet("subnet-a", "us-east-1a", "use1-az1", 1)}, NextToken: aws.String("p2")},
		"p2": {Subnets: []ec2types.Subnet{ec2Subnet("subnet-b", "us-east-1b", "use1-az2", 2)}},
	}}
	got, err := Subnets(context.Background(), api, []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"a": "*"}}})
	if err != nil {
		t.Fatal(err)
	}
	if ids := joinIDs(got, func(s awsv1.Subnet) string { return s.ID }); ids != "subnet-b,subnet-a" {
		t.Errorf("subnets %s, want both pages' (subnet-b,subnet-a)", ids)
	}
}

type pagedSubnets struct {
	netFake
	pages map[string]ec2.DescribeSubnetsOutput
}

func (p *pagedSubnets) DescribeSubnets(_ context.Context, in *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	out, ok := p.pages[aws.ToString(in.NextToken)]
	if !ok {
		return nil, fmt.Errorf("unknown token %q", aws.ToString(in.NextToken))
	}
	return &out, nil
}

func TestSubnetPerZonePicksTheFirstOfEachZone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		subnets []awsv1.Subnet
		want    map[string]string
	}{
		{"none", nil, map[string]string{}},
		{"first wins", []awsv1.Subnet{
			{ID: "subnet-b", Zone: "us-east-1a"}, {ID: "subnet-a", Zone: "us-east-1a"},
			{ID: "subnet-c", Zone: "us-east-1b"}, {ID: "subnet-d", Zone: "us-east-1a"},
		}, map[string]string{"us-east-1a": "subnet-b", "us-east-1b": "subnet-c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := subnetPerZone(tc.subnets); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("subnetPerZone = %v, want %v", got, tc.want)
			}
		})
	}
}

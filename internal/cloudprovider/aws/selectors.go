package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// tagFilters turns a selector term's tags into EC2 filters as Karpenter
// reads them: "*" asks only that the tag exists.
func tagFilters(tags map[string]string) []ec2types.Filter {
	var out []ec2types.Filter
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if v := tags[k]; v == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return out
}

// Subnets returns the subnets the class's terms select, each term's filters
// ANDed and the terms ORed, most free addresses first: the first subnet of
// a zone is the one instances in that zone are launched into.
func Subnets(ctx context.Context, api EC2Network, terms []awsv1.SubnetSelectorTerm) ([]awsv1.Subnet, error) {
	free := map[string]int32{}
	found := map[string]awsv1.Subnet{}
	for i, term := range terms {
		in := &ec2.DescribeSubnetsInput{Filters: tagFilters(term.Tags)}
		if term.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("subnet-id"), Values: []string{term.ID}})
		}
		pages := ec2.NewDescribeSubnetsPaginator(api, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("spec.subnetSelectorTerms[%d]: describing subnets: %w", i, err)
			}
			for _, s := range page.Subnets {
				id := aws.ToString(s.SubnetId)
				found[id] = awsv1.Subnet{ID: id, Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)}
				free[id] = aws.ToInt32(s.AvailableIpAddressCount)
			}
		}
	}
	out := slices.Collect(maps.Values(found))
	sort.Slice(out, func(i, j int) bool {
		if free[out[i].ID] != free[out[j].ID] {
			return free[out[i].ID] > free[out[j].ID]
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// SecurityGroups returns the security groups the class's terms select, by
// tags, ID or name, sorted by ID.
func SecurityGroups(ctx context.Context, api EC2Network, terms []awsv1.SecurityGroupSelectorTerm) ([]awsv1.SecurityGroup, error) {
	found := map[string]awsv1.SecurityGroup{}
	for i, term := range terms {
		in := &ec2.DescribeSecurityGroupsInput{Filters: tagFilters(term.Tags)}
		if term.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-id"), Values: []string{term.ID}})
		}
		if term.Name != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-name"), Values: []string{term.Name}})
		}
		pages := ec2.NewDescribeSecurityGroupsPaginator(api, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("spec.securityGroupSelectorTerms[%d]: describing security groups: %w", i, err)
			}
			for _, g := range page.SecurityGroups {
				id := aws.ToString(g.GroupId)
				found[id] = awsv1.SecurityGroup{ID: id, Name: aws.ToString(g.GroupName)}
			}
		}
	}
	out := slices.Collect(maps.Values(found))
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// zonesOf lists the zones of subnets in order of first appearance.
func zonesOf(subnets []awsv1.Subnet) []string {
	var out []string
	for _, s := range subnets {
		if !slices.Contains(out, s.Zone) {
			out = append(out, s.Zone)
		}
	}
	return out
}

// subnetPerZone is the subnet to launch into in each zone: the first of the
// status's, which lists the most free addresses first.
func subnetPerZone(subnets []awsv1.Subnet) map[string]string {
	out := map[string]string{}
	for _, s := range subnets {
		if _, ok := out[s.Zone]; !ok {
			out[s.Zone] = s.ID
		}
	}
	return out
}

func joinIDs[T any](items []T, id func(T) string) string {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = id(it)
	}
	return strings.Join(ids, ",")
}

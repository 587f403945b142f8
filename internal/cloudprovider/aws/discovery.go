package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/internal/catalog"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
)

// EC2 is the part of EC2's API that discovery calls; *ec2.Client has it,
// and tests may give a fake.
type EC2 interface {
	DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(context.Context, *ec2.DescribeInstanceTypeOfferingsInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeAvailabilityZones(context.Context, *ec2.DescribeAvailabilityZonesInput, ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error)
}

// Prices are on-demand prices by instance type, USD per hour.
type Prices struct {
	// Source says where they come from, as the catalog's priceSource.
	Source string
	// OnDemand returns a type's price, and false when there is none.
	OnDemand func(instanceType string) (float64, bool)
}

// BuiltinPrices are the built-in catalog's prices: the fallback while the
// Pricing API cannot be reached.
func BuiltinPrices() Prices {
	d, err := awscatalog.Region(awscatalog.DefaultRegion)
	source := "the built-in table"
	if err == nil {
		source = d.PriceSource
	}
	return Prices{Source: "built-in, not the Pricing API: " + source, OnDemand: awscatalog.OnDemandPrice}
}

// Discover asks EC2 for the region's instance types, the zones that offer
// each, and the zones' IDs, and returns them as a catalog priced by prices.
// Types Karpenter does not launch and types without a price are left out:
// an offering that cannot be priced cannot be compared. Spot prices follow
// the built-in model until the spot price history is read.
func Discover(ctx context.Context, api EC2, region string, prices Prices) (*catalog.Catalog, error) {
	d := &awscatalog.Data{Source: "EC2 DescribeInstanceTypes and DescribeInstanceTypeOfferings in " + region, PriceSource: prices.Source}
	index := map[string]int{}
	types := ec2.NewDescribeInstanceTypesPaginator(api, &ec2.DescribeInstanceTypesInput{})
	for types.HasMorePages() {
		page, err := types.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance types in %s: %w", region, err)
		}
		for _, info := range page.InstanceTypes {
			f, ok := Facts(info)
			if !ok {
				continue
			}
			price, priced := prices.OnDemand(f.Name)
			if !priced {
				continue
			}
			f.OnDemandPrice = price
			index[f.Name] = len(d.Types)
			d.Types = append(d.Types, f)
		}
	}
	zoneIDs := map[string]string{}
	azs, err := api.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		return nil, fmt.Errorf("describing availability zones in %s: %w", region, err)
	}
	for _, z := range azs.AvailabilityZones {
		zoneIDs[aws.ToString(z.ZoneName)] = aws.ToString(z.ZoneId)
	}
	zones := map[string]*awscatalog.ZoneData{}
	var order []string
	offerings := ec2.NewDescribeInstanceTypeOfferingsPaginator(api, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
	})
	for offerings.HasMorePages() {
		page, err := offerings.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance type offerings in %s: %w", region, err)
		}
		for _, o := range page.InstanceTypeOfferings {
			i, ok := index[string(o.InstanceType)]
			if !ok {
				continue
			}
			name := aws.ToString(o.Location)
			z := zones[name]
			if z == nil {
				z = &awscatalog.ZoneData{Name: name, ID: zoneIDs[name]}
				zones[name] = z
				order = append(order, name)
			}
			z.Types = append(z.Types, i)
		}
	}
	r := awscatalog.RegionData{Name: region}
	for _, name := range order {
		r.Zones = append(r.Zones, *zones[name])
	}
	d.Regions = []awscatalog.RegionData{r}
	c, err := d.Region(region)
	if err != nil {
		return nil, err
	}
	if len(c.InstanceTypes) == 0 {
		return nil, fmt.Errorf("EC2 in %s offers no instance type that is priced and launchable", region)
	}
	return c, nil
}

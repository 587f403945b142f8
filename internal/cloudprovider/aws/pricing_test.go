package aws

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/internal/catalog"
)

type fakeSpotHistory []ec2types.SpotPrice

func (f fakeSpotHistory) DescribeSpotPriceHistory(context.Context, *ec2.DescribeSpotPriceHistoryInput, ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error) {
	return &ec2.DescribeSpotPriceHistoryOutput{SpotPriceHistory: f}, nil
}

// TestApplySpotPrices: the latest history price per type and zone wins, and
// a spot offering without one is not offered; on-demand ones stay.
func TestApplySpotPrices(t *testing.T) {
	now := time.Now()
	hist := fakeSpotHistory{
		{InstanceType: "m5.large", AvailabilityZone: aws.String("us-east-1a"), SpotPrice: aws.String("0.0400"), Timestamp: aws.Time(now.Add(-time.Hour))},
		{InstanceType: "m5.large", AvailabilityZone: aws.String("us-east-1a"), SpotPrice: aws.String("0.0350"), Timestamp: aws.Time(now)},
		{InstanceType: "m5.large", AvailabilityZone: aws.String("us-east-1b"), SpotPrice: aws.String("bad"), Timestamp: aws.Time(now)},
	}
	c := &catalog.Catalog{InstanceTypes: []catalog.Type{{Name: "m5.large", Offerings: []catalog.Offering{
		{Zone: "us-east-1a", CapacityType: "on-demand", Price: 0.096},
		{Zone: "us-east-1a", CapacityType: "spot", Price: 0.0336},
		{Zone: "us-east-1b", CapacityType: "on-demand", Price: 0.096},
		{Zone: "us-east-1b", CapacityType: "spot", Price: 0.0336},
	}}}}
	if err := ApplySpotPrices(context.Background(), hist, c); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, o := range c.InstanceTypes[0].Offerings {
		got[o.Zone+"/"+o.CapacityType] = o.Price
	}
	want := map[string]float64{"us-east-1a/on-demand": 0.096, "us-east-1a/spot": 0.035, "us-east-1b/on-demand": 0.096}
	if len(got) != len(want) {
		t.Fatalf("offerings %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if !strings.Contains(c.SpotPriceModel, "1 of 2") {
		t.Errorf("SpotPriceModel = %q, want it to count 1 of 2", c.SpotPriceModel)
	}
}

package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"

	"github.com/nodewright/nodewright/internal/catalog"
)

// Pricing reads on-demand prices from the AWS Price List API.
type Pricing interface {
	GetProducts(context.Context, *pricing.GetProductsInput, ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

// EC2SpotPrices reads the spot price history.
type EC2SpotPrices interface {
	DescribeSpotPriceHistory(context.Context, *ec2.DescribeSpotPriceHistoryInput, ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
}

// PricingAPIPrices reads the region's on-demand Linux prices (shared
// tenancy, no pre-installed software) from the Price List API.
func PricingAPIPrices(ctx context.Context, api Pricing, region string) (Prices, error) {
	filter := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	in := &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: []pricingtypes.Filter{
		filter("regionCode", region), filter("operatingSystem", "Linux"), filter("tenancy", "Shared"),
		filter("capacitystatus", "Used"), filter("preInstalledSw", "NA"), filter("operation", "RunInstances"),
	}}
	prices := map[string]float64{}
	pages := pricing.NewGetProductsPaginator(api, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return Prices{}, fmt.Errorf("reading on-demand prices of %s from the Pricing API: %w", region, err)
		}
		for _, doc := range page.PriceList {
			name, price, err := onDemandPrice(doc)
			if err != nil {
				return Prices{}, err
			}
			if name != "" && price > 0 {
				prices[name] = price
			}
		}
	}
	if len(prices) == 0 {
		return Prices{}, fmt.Errorf("the Pricing API returned no on-demand Linux price for %s", region)
	}
	return Prices{Source: fmt.Sprintf("the AWS Pricing API, %s, read %s", region, time.Now().UTC().Format(time.RFC3339)),
		OnDemand: func(t string) (float64, bool) { p, ok := prices[t]; return p, ok }}, nil
}

// onDemandPrice reads one price list document: its instance type and its
// on-demand hourly USD price.
func onDemandPrice(doc string) (string, float64, error) {
	var d struct {
		Product struct {
			Attributes map[string]string `json:"attributes"`
		} `json:"product"`
		Terms struct {
			OnDemand map[string]struct {
				PriceDimensions map[string]struct {
					Unit         string            `json:"unit"`
					PricePerUnit map[string]string `json:"pricePerUnit"`
				} `json:"priceDimensions"`
			} `json:"OnDemand"`
		} `json:"terms"`
	}
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		return "", 0, fmt.Errorf("a Pricing API product is not JSON: %w", err)
	}
	for _, term := range d.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			if usd, ok := dim.PricePerUnit["USD"]; ok {
				p, err := strconv.ParseFloat(usd, 64)
				if err != nil {
					return "", 0, fmt.Errorf("Pricing API price %q of %s: %w", usd, d.Product.Attributes["instanceType"], err)
				}
				return d.Product.Attributes["instanceType"], p, nil
			}
		}
	}
	return d.Product.Attributes["instanceType"], 0, nil
}

// ApplySpotPrices sets each spot offering's price to the latest of EC2's
// spot price history for its type and zone. An offering the history has no
// price for is not offered: it cannot be compared. When the history cannot
// be read at all, the caller keeps the catalog's modelled prices.
func ApplySpotPrices(ctx context.Context, api EC2SpotPrices, c *catalog.Catalog) error {
	type key struct{ t, z string }
	latest := map[key]float64{}
	when := map[key]time.Time{}
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(api, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
		StartTime:           aws.Time(time.Now()),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("reading the spot price history: %w", err)
		}
		for _, h := range page.SpotPriceHistory {
			p, err := strconv.ParseFloat(aws.ToString(h.SpotPrice), 64)
			if err != nil || p <= 0 {
				continue
			}
			k := key{string(h.InstanceType), aws.ToString(h.AvailabilityZone)}
			if t := aws.ToTime(h.Timestamp); t.After(when[k]) || when[k].IsZero() {
				latest[k], when[k] = p, t
			}
		}
	}
	total, fromHistory := 0, 0
	for i := range c.InstanceTypes {
		t := &c.InstanceTypes[i]
		kept := t.Offerings[:0]
		for _, o := range t.Offerings {
			if o.CapacityType != string(ec2types.DefaultTargetCapacityTypeSpot) {
				kept = append(kept, o)
				continue
			}
			total++
			if p, ok := latest[key{t.Name, o.Zone}]; ok {
				o.Price = p
				fromHistory++
				kept = append(kept, o)
			}
		}
		t.Offerings = kept
	}
	c.SpotPriceModel = fmt.Sprintf("EC2's spot price history: %d of %d spot offerings priced; the rest are not offered", fromHistory, total)
	return nil
}

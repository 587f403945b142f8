package livetest

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/pricing"

	awsprovider "github.com/nodewright/nodewright/internal/cloudprovider/aws"
)

// TestPricesFromPricingAPIAndSpotHistory: discovery prices the catalog
// from the Pricing API (only priced types are offered) and the spot price
// history; with no answer from the Pricing API it falls back to the
// built-in prices and says so.
func TestPricesFromPricingAPIAndSpotHistory(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := deadline()
	defer cancel()
	e.front.SetPrice("us-east-1", "m5.large", 0.096)
	e.front.SetPrice("us-east-1", "c5.large", 0.085)
	r := &awsprovider.Refresher{Provider: e.provider, EC2: e.ec2, Spot: e.ec2, Region: "us-east-1", Pricing: pricing.NewFromConfig(e.front.Config())}
	if err := refreshOnce(ctx, r); err != nil {
		t.Fatal(err)
	}
	c := e.provider.Catalog()
	got := map[string]float64{}
	spot := 0
	for _, it := range c.InstanceTypes {
		for _, o := range it.Offerings {
			switch o.CapacityType {
			case "on-demand":
				got[it.Name] = o.Price
			case "spot":
				spot++
				// moto's spot price history says 0.00001 for everything.
				if o.Price != 0.00001 {
					t.Errorf("%s spot in %s costs %v, want the history's 0.00001", it.Name, o.Zone, o.Price)
				}
			}
		}
	}
	if len(got) != 2 || got["m5.large"] != 0.096 || got["c5.large"] != 0.085 {
		t.Errorf("on-demand prices %v, want m5.large 0.096 and c5.large 0.085 only", got)
	}
	if spot == 0 || !strings.Contains(c.SpotPriceModel, "spot price history") || !strings.Contains(c.SpotPriceModel, "not offered") {
		t.Errorf("%d spot offerings, model %q", spot, c.SpotPriceModel)
	}
	if live, note := r.PriceStatus(); !live || !strings.Contains(note, "Pricing API") {
		t.Errorf("PriceStatus = %v, %q; want live from the Pricing API", live, note)
	}

	// A Pricing API with no prices for the region: the built-in table.
	bare := newEnv(t)
	r = &awsprovider.Refresher{Provider: bare.provider, EC2: bare.ec2, Region: "us-east-1", Pricing: pricing.NewFromConfig(bare.front.Config())}
	if err := refreshOnce(ctx, r); err != nil {
		t.Fatal(err)
	}
	if n := len(bare.provider.Catalog().InstanceTypes); n < 500 {
		t.Errorf("with the built-in prices, %d types are offered; want moto's several hundred", n)
	}
	if live, note := r.PriceStatus(); live || !strings.Contains(note, "built-in") || !strings.Contains(note, "could not be reached") {
		t.Errorf("PriceStatus = %v, %q; want the built-in table and why", live, note)
	}
	bare.class(t, "prices", nil)
	bare.ctrl.Resolver.PriceStatus = r.PriceStatus
	class := bare.reconcile(t, "prices")
	found := false
	for _, cond := range class.Status.Conditions {
		if cond.Type == awsprovider.ConditionPricesLive {
			found = cond.Status == "False" && strings.Contains(cond.Message, "built-in")
		}
	}
	if !found {
		t.Errorf("EC2NodeClass conditions %+v lack PricesLive=False naming the built-in prices", class.Status.Conditions)
	}
}

// refreshOnce runs one discovery, as the Refresher's first tick does.
func refreshOnce(ctx context.Context, r *awsprovider.Refresher) error { return r.Refresh(ctx) }

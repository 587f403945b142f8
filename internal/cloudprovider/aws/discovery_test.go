package aws_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/nodewright/nodewright/internal/cloudprovider/aws"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
	"github.com/nodewright/nodewright/internal/testaws"
)

// TestDiscover runs discovery against an EC2 API on loopback (moto).
func TestDiscover(t *testing.T) {
	moto := testaws.Start(t)
	t.Run("matches the built-in catalog", func(t *testing.T) { matchesBuiltin(t, moto) })
	t.Run("leaves out unpriced types", func(t *testing.T) { leavesOutUnpriced(t, moto) })
}

// matchesBuiltin discovers us-east-1 and compares it with the built-in
// catalog, which is generated from the same facts: every type, label, zone
// and offering must agree, so a live catalog and the built-in one plan
// alike.
func matchesBuiltin(t *testing.T, moto *testaws.Moto) {
	live, err := aws.Discover(context.Background(), moto.EC2(), testaws.Region, aws.BuiltinPrices())
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := awscatalog.Region(testaws.Region)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(live.PriceSource, "built-in, not the Pricing API") {
		t.Errorf("priceSource %q must say the prices are the built-in fallback", live.PriceSource)
	}
	if !equality.Semantic.DeepEqual(live.ZoneIDs, builtin.ZoneIDs) {
		t.Errorf("zone IDs: live %v, built-in %v", live.ZoneIDs, builtin.ZoneIDs)
	}
	if len(live.InstanceTypes) != len(builtin.InstanceTypes) {
		t.Errorf("%d types discovered, %d built in", len(live.InstanceTypes), len(builtin.InstanceTypes))
	}
	byName := map[string]int{}
	for i, it := range builtin.InstanceTypes {
		byName[it.Name] = i
	}
	differ := 0
	for _, got := range live.InstanceTypes {
		i, ok := byName[got.Name]
		if !ok {
			t.Errorf("%s discovered but not built in", got.Name)
			continue
		}
		if want := builtin.InstanceTypes[i]; !equality.Semantic.DeepEqual(got, want) {
			if differ++; differ <= 3 {
				t.Errorf("%s differs:\n live     %+v\n built-in %+v", got.Name, got, want)
			}
		}
	}
	if differ > 3 {
		t.Errorf("... %d types differ in all", differ)
	}
}

// leavesOutUnpriced: a type without a price is not offered.
func leavesOutUnpriced(t *testing.T, moto *testaws.Moto) {
	only := aws.Prices{Source: "test", OnDemand: func(name string) (float64, bool) {
		return 0.1, name == "m5.large" || name == "m6g.large"
	}}
	c, err := aws.Discover(context.Background(), moto.EC2(), testaws.Region, only)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range c.InstanceTypes {
		names = append(names, it.Name)
	}
	if strings.Join(names, ",") != "m5.large,m6g.large" {
		t.Errorf("discovered %v, want only the priced m5.large and m6g.large", names)
	}
	none := aws.Prices{Source: "test", OnDemand: func(string) (float64, bool) { return 0, false }}
	if _, err := aws.Discover(context.Background(), moto.EC2(), testaws.Region, none); err == nil || !strings.Contains(err.Error(), "no instance type that is priced") {
		t.Errorf("with no prices: %v, want an error saying nothing is priced", err)
	}
}

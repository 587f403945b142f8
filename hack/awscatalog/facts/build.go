package facts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/nodewright/nodewright/internal/cloudprovider/aws"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
)

// PriceRegion is the region the price table prices; every region of the
// catalog is priced as this one until the live provider reads the Pricing
// API.
const PriceRegion = "us-east-1"

// Find locates moto with python3 and takes the price table from pricesFile.
func Find(pricesFile string) (Sources, error) {
	dir, version, zones, err := probeMoto()
	if err != nil {
		return Sources{}, err
	}
	if _, err := os.Stat(pricesFile); err != nil {
		return Sources{}, fmt.Errorf("on-demand price table: %w", err)
	}
	return Sources{MotoDir: dir, MotoVersion: version, ZoneIDs: zones, PricesFile: pricesFile}, nil
}

// readPrices reads {"prices": {"us-east-1": {"m5.large": 0.096}}} and
// returns PriceRegion's table.
func readPrices(path string) (map[string]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Prices map[string]map[string]float64 `json:"prices"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	prices := doc.Prices[PriceRegion]
	if len(prices) == 0 {
		return nil, fmt.Errorf("reading %s: prices.%s is missing or empty", path, PriceRegion)
	}
	return prices, nil
}

// Build turns the sources into the catalog's data. A type is kept when it is
// hardware-virtualized, x86_64 or arm64 (what Karpenter's AWS provider
// launches) and the price table has a price for it; a type without a price
// cannot be compared, so it is left out, as the live provider leaves out
// offerings without a price.
func Build(src Sources) (*awscatalog.Data, error) {
	types, err := readTypes(src.MotoDir)
	if err != nil {
		return nil, err
	}
	offerings, err := readOfferings(src.MotoDir)
	if err != nil {
		return nil, err
	}
	prices, err := readPrices(src.PricesFile)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(types))
	for name := range types {
		names = append(names, name)
	}
	sort.Strings(names)
	d := &awscatalog.Data{
		Source: fmt.Sprintf("EC2 DescribeInstanceTypes and DescribeInstanceTypeOfferings as recorded in moto %s", src.MotoVersion),
		PriceSource: fmt.Sprintf("on-demand USD/h in %s from %s (the AWS provider's published table); every region is priced as %s",
			PriceRegion, filepath.Base(src.PricesFile), PriceRegion),
	}
	index := map[string]int{}
	for _, name := range names {
		price, priced := prices[name]
		f, launchable := aws.Facts(types[name])
		if !priced || !launchable {
			continue
		}
		f.OnDemandPrice = price
		index[name] = len(d.Types)
		d.Types = append(d.Types, f)
	}
	regions := make([]string, 0, len(offerings))
	for r := range offerings {
		regions = append(regions, r)
	}
	sort.Strings(regions)
	for _, r := range regions {
		rd := awscatalog.RegionData{Name: r}
		zones := make([]string, 0, len(offerings[r]))
		for z := range offerings[r] {
			zones = append(zones, z)
		}
		sort.Strings(zones)
		for _, z := range zones {
			zd := awscatalog.ZoneData{Name: z, ID: src.ZoneIDs[r][z], Types: []int{}}
			for _, name := range offerings[r][z] {
				if i, ok := index[name]; ok {
					zd.Types = append(zd.Types, i)
				}
			}
			sort.Ints(zd.Types)
			zd.Types = dedupe(zd.Types)
			if len(zd.Types) > 0 {
				rd.Zones = append(rd.Zones, zd)
			}
		}
		if len(rd.Zones) > 0 {
			d.Regions = append(d.Regions, rd)
		}
	}
	if len(d.Types) == 0 || len(d.Regions) == 0 {
		return nil, fmt.Errorf("the sources gave no priced instance types in any region (moto at %s, prices in %s)", src.MotoDir, src.PricesFile)
	}
	return d, nil
}

func dedupe(sorted []int) []int {
	out := sorted[:0]
	for i, v := range sorted {
		if i == 0 || v != sorted[i-1] {
			out = append(out, v)
		}
	}
	return out
}

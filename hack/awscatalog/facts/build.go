package facts

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

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
		t := types[name]
		price, priced := prices[name]
		arch := archOf(t.ProcessorInfo.SupportedArchitectures)
		if !priced || arch == "" || !contains(t.SupportedVirtualizationTypes, "hvm") {
			continue
		}
		index[name] = len(d.Types)
		d.Types = append(d.Types, typeFacts(t, arch, price))
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

// typeFacts keeps what the catalog needs of one DescribeInstanceTypes record.
func typeFacts(t ec2Type, arch string, price float64) awscatalog.TypeFacts {
	f := awscatalog.TypeFacts{
		Name:                t.InstanceType,
		VCPUs:               t.VCpuInfo.DefaultVCpus,
		MemoryMiB:           t.MemoryInfo.SizeInMiB,
		Arch:                arch,
		CPUManufacturer:     t.ProcessorInfo.Manufacturer,
		ClockMHz:            int64(math.Round(t.ProcessorInfo.SustainedClockSpeedInGhz * 1000)),
		Hypervisor:          t.Hypervisor,
		BareMetal:           t.BareMetal,
		EncryptionInTransit: t.NetworkInfo.EncryptionInTransitSupported,
		ENIs:                t.NetworkInfo.MaximumNetworkInterfaces,
		IPv4PerENI:          t.NetworkInfo.Ipv4AddressesPerInterface,
		Spot:                contains(t.SupportedUsageClasses, "spot"),
		OnDemandPrice:       price,
	}
	// The default network card's interfaces are the ones the VPC CNI uses
	// for pods; a type with several cards has more in total.
	for _, card := range t.NetworkInfo.NetworkCards {
		if card.NetworkCardIndex == t.NetworkInfo.DefaultNetworkCardIndex && card.MaximumNetworkInterfaces > 0 {
			f.ENIs = card.MaximumNetworkInterfaces
		}
		f.NetworkBandwidthMbps += int64(math.Round(card.BaselineBandwidthInGbps * 1000))
	}
	if t.EbsInfo.EbsOptimizedSupport == "default" && t.EbsInfo.EbsOptimizedInfo != nil {
		f.EBSBandwidthMbps = t.EbsInfo.EbsOptimizedInfo.MaximumBandwidthInMbps
	}
	if s := t.InstanceStorageInfo; s != nil && s.NvmeSupport != "" && s.NvmeSupport != "unsupported" && s.TotalSizeInGB != nil {
		f.LocalNVMeGB = *s.TotalSizeInGB
	}
	if t.NetworkInfo.EfaInfo != nil {
		f.EFAs = t.NetworkInfo.EfaInfo.MaximumEfaInterfaces
	}
	if t.GpuInfo != nil {
		f.GPUs = devicesOf(t.GpuInfo.Gpus)
	}
	if t.NeuronInfo != nil {
		f.NeuronDevices = devicesOf(t.NeuronInfo.NeuronDevices)
	}
	if t.InferenceAcceleratorInfo != nil {
		f.InferenceAccelerators = devicesOf(t.InferenceAcceleratorInfo.Accelerators)
	}
	return f
}

func devicesOf(in []ec2Device) []awscatalog.Device {
	out := make([]awscatalog.Device, 0, len(in))
	for _, d := range in {
		out = append(out, awscatalog.Device{
			Name:           d.Name,
			Manufacturer:   d.Manufacturer,
			Count:          d.Count,
			MemoryMiB:      d.MemoryInfo.SizeInMiB,
			CoresPerDevice: d.CoreInfo.Count,
		})
	}
	return out
}

// archOf maps EC2's architectures to Kubernetes' names; "" for those
// Karpenter does not launch (i386, x86_64_mac, arm64_mac).
func archOf(archs []string) string {
	switch {
	case contains(archs, "x86_64"):
		return "amd64"
	case contains(archs, "arm64"):
		return "arm64"
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
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

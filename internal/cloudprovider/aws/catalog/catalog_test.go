package awscatalog_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/hack/awscatalog/facts"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
	"github.com/nodewright/nodewright/internal/testcluster"
)

// TestDataIsFresh regenerates the data file from moto and the price table
// and fails when it differs from the checked-in one. It does not skip when
// a source is missing: the sources are part of every machine we test on.
func TestDataIsFresh(t *testing.T) {
	compat, err := testcluster.CompatDir()
	if err != nil {
		t.Fatal(err)
	}
	src, err := facts.Find(filepath.Join(compat, "aws", "ondemand-prices.json"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := facts.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	want, err := awscatalog.Encode(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(awscatalog.DataFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale (moto %s): run `go generate ./internal/cloudprovider/aws/catalog` and commit the result", awscatalog.DataFile, src.MotoVersion)
	}
}

func TestRegion(t *testing.T) {
	regions := awscatalog.Regions()
	if len(regions) < 20 {
		t.Fatalf("Regions() = %v, want the regions of moto's offerings", regions)
	}
	c, err := awscatalog.Region("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.InstanceTypes) < 500 || len(c.ZoneIDs) < 6 {
		t.Errorf("us-east-1: %d types, %d zone IDs", len(c.InstanceTypes), len(c.ZoneIDs))
	}
	if !strings.Contains(c.PriceSource, "us-east-1") || !strings.Contains(c.SpotPriceModel, "35%") {
		t.Errorf("price source %q, spot model %q: both must say where prices come from", c.PriceSource, c.SpotPriceModel)
	}
	_, err = awscatalog.Region("mars-north-1")
	if err == nil || !strings.Contains(err.Error(), "us-west-2") {
		t.Errorf("unknown region: %v, want an error listing the known regions", err)
	}
}

func TestTypes(t *testing.T) {
	c, err := awscatalog.Region("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for i, it := range c.InstanceTypes {
		byName[it.Name] = i
	}
	cases := []struct {
		name   string
		labels map[string]string
		absent []string
		pods   int64
		noSpot bool
	}{
		{name: "r5a.8xlarge", pods: 234, labels: map[string]string{
			awscatalog.LabelInstanceCategory: "r", awscatalog.LabelInstanceFamily: "r5a", awscatalog.LabelInstanceGeneration: "5",
			awscatalog.LabelInstanceSize: "8xlarge", awscatalog.LabelInstanceCPU: "32", awscatalog.LabelInstanceMemory: "262144",
			awscatalog.LabelInstanceCPUManufacturer: "amd", awscatalog.LabelInstanceHypervisor: "nitro",
			awscatalog.LabelInstanceEncryptionInTransit: "false", awscatalog.LabelInstanceEBSBandwidth: "4750",
			awscatalog.LabelInstanceNetworkBandwidth: "7500", awscatalog.LabelInstanceCapabilityFlex: "false",
		}, absent: []string{awscatalog.LabelInstanceGPUCount, awscatalog.LabelInstanceLocalNVMe}},
		{name: "m5.large", pods: 29},
		{name: "g5.xlarge", labels: map[string]string{
			awscatalog.LabelInstanceGPUName: "a10g", awscatalog.LabelInstanceGPUManufacturer: "nvidia",
			awscatalog.LabelInstanceGPUCount: "1", awscatalog.LabelInstanceGPUMemory: "22888", awscatalog.LabelInstanceLocalNVMe: "250",
		}},
		{name: "inf2.xlarge", labels: map[string]string{
			awscatalog.LabelInstanceAcceleratorName: "inferentia2", awscatalog.LabelInstanceAcceleratorManufacturer: "aws",
			awscatalog.LabelInstanceAcceleratorCount: "1",
		}},
		{name: "m7i-flex.large", labels: map[string]string{awscatalog.LabelInstanceCapabilityFlex: "true", awscatalog.LabelInstanceFamily: "m7i-flex"}},
		{name: "m5.metal", labels: map[string]string{awscatalog.LabelInstanceHypervisor: "", awscatalog.LabelInstanceSize: "metal"}},
		{name: "u-6tb1.112xlarge", noSpot: true, labels: map[string]string{awscatalog.LabelInstanceCategory: "u", awscatalog.LabelInstanceGeneration: "1"}},
		{name: "m6g.large", labels: map[string]string{awscatalog.LabelInstanceCPUManufacturer: "aws"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i, ok := byName[tc.name]
			if !ok {
				t.Fatalf("%s is not in us-east-1", tc.name)
			}
			typ := c.InstanceTypes[i]
			for k, v := range tc.labels {
				if got, ok := typ.Labels[k]; !ok || got != v {
					t.Errorf("%s = %q (set %v), want %q", k, got, ok, v)
				}
			}
			for _, k := range tc.absent {
				if v, ok := typ.Labels[k]; ok {
					t.Errorf("%s = %q, want the label absent", k, v)
				}
			}
			if tc.pods != 0 && typ.Pods != tc.pods {
				t.Errorf("pods = %d, want %d", typ.Pods, tc.pods)
			}
			var od, spot float64
			for _, o := range typ.Offerings {
				switch o.CapacityType {
				case "on-demand":
					od = o.Price
				case "spot":
					spot = o.Price
				}
			}
			switch {
			case od <= 0:
				t.Errorf("no on-demand price")
			case tc.noSpot && spot != 0:
				t.Errorf("spot offering at %v for a type EC2 does not sell as spot", spot)
			case !tc.noSpot && (spot <= 0 || spot >= od):
				t.Errorf("prices on-demand %v spot %v: want both, spot cheaper", od, spot)
			}
		})
	}
	if got := c.InstanceTypes[byName["g5.xlarge"]]; got.GPUs != 1 || got.GPUResourceName() != "nvidia.com/gpu" {
		t.Errorf("g5.xlarge GPUs %d of %s", got.GPUs, got.GPUResourceName())
	}
	if got := c.InstanceTypes[byName["inf2.xlarge"]]; got.GPUResource != "aws.amazon.com/neuron" || got.ExtendedResources["aws.amazon.com/neuroncore"] != 2 {
		t.Errorf("inf2.xlarge: %s x%d, %v", got.GPUResource, got.GPUs, got.ExtendedResources)
	}
}

func TestENILimitedPods(t *testing.T) {
	for _, tc := range []struct {
		enis, ips int64
		reserved  int
		want      int64
	}{{3, 10, 0, 29}, {8, 30, 0, 234}, {3, 10, 1, 20}, {3, 10, 3, 0}, {3, 10, 5, 0}} {
		if got := awscatalog.ENILimitedPods(tc.enis, tc.ips, tc.reserved); got != tc.want {
			t.Errorf("ENILimitedPods(%d, %d, %d) = %d, want %d", tc.enis, tc.ips, tc.reserved, got, tc.want)
		}
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	d := &awscatalog.Data{Source: "s", PriceSource: "p",
		Types:   []awscatalog.TypeFacts{{Name: "a.large", VCPUs: 2, MemoryMiB: 4096, Arch: "amd64", ENIs: 3, IPv4PerENI: 10, OnDemandPrice: 0.1}},
		Regions: []awscatalog.RegionData{{Name: "r-1", Zones: []awscatalog.ZoneData{{Name: "r-1a", ID: "r1-az1", Types: []int{0}}}}}}
	b, err := awscatalog.Encode(d)
	if err != nil {
		t.Fatal(err)
	}
	back, err := awscatalog.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := back.Region("r-1")
	if err != nil || len(c.InstanceTypes) != 1 || c.ZoneIDs["r-1a"] != "r1-az1" || c.InstanceTypes[0].Pods != 29 {
		t.Fatalf("round trip: %+v, %v", c, err)
	}
	bad := bytes.Replace(b, []byte(`"types":[0]`), []byte(`"types":[7]`), 1)
	if _, err := awscatalog.Decode(bad); err == nil || !strings.Contains(err.Error(), "zone r-1a lists type 7") {
		t.Errorf("out-of-range index: %v", err)
	}
}

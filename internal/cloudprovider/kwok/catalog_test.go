package kwok

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/catalog"
	"github.com/nodewright/nodewright/internal/instancetype"
)

func TestBuiltinCatalogIsValidAndFamiliar(t *testing.T) {
	c := BuiltinCatalog()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	its := Build(c, Options{VMMemoryOverheadPercent: instancetype.DefaultVMMemoryOverheadPercent})
	if len(its) != 6*7+3 {
		t.Fatalf("%d types", len(its))
	}
	byName := map[string]*instancetype.InstanceType{}
	for _, it := range its {
		byName[it.Name] = it
		if len(it.Offerings) != 6 {
			t.Errorf("%s: %d offerings, want on-demand and spot in 3 zones", it.Name, len(it.Offerings))
		}
		for _, o := range it.Offerings {
			if o.CapacityType == "spot" {
				od := 0.0
				for _, p := range it.Offerings {
					if p.Zone == o.Zone && p.CapacityType == "on-demand" {
						od = p.Price
					}
				}
				if o.Price >= od || o.Price < 0.29*od {
					t.Errorf("%s %s: spot %v vs on-demand %v", it.Name, o.Zone, o.Price, od)
				}
			}
		}
	}
	// The type of the allocatable example users report, with its arithmetic.
	r := byName["r5a.8xlarge"]
	if r == nil {
		t.Fatal("no r5a.8xlarge")
	}
	want := "262144Mi - 19661Mi (7.5%) - 2829Mi kube-reserved - 100Mi eviction = 239554Mi"
	if got := r.Arithmetic(corev1.ResourceMemory).String(); got != want {
		t.Errorf("r5a.8xlarge memory:\n got %s\nwant %s", got, want)
	}
	if g := byName["g4dn.12xlarge"]; g == nil || g.Capacity.Name("nvidia.com/gpu", "").Value() != 4 {
		t.Errorf("g4dn.12xlarge should have 4 GPUs")
	}
	if l := byName["m6g.large"].Requirements.Labels(); l[corev1.LabelArchStable] != "arm64" || l[LabelInstanceFamily] != "m6g" || l[LabelInstanceCPU] != "2" {
		t.Errorf("m6g.large labels %v", l)
	}
}

func TestReadCatalogBuildsTypes(t *testing.T) {
	c, err := catalog.Read(strings.NewReader(`{"instanceTypes":[{"name":"tiny","family":"t","size":"s","cpu":2,"memoryMiB":4096,"pods":10,"arch":"arm64",
		"offerings":[{"zone":"z1","capacityType":"spot","price":0.01},{"zone":"z2","capacityType":"on-demand","price":0.03,"unavailable":true}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	it := Build(c, Options{})[0]
	if got := it.Requirements.Get(corev1.LabelTopologyZone).Values(); len(got) != 2 {
		t.Errorf("zones %v", got)
	}
	if avail := it.Offerings.Available(); len(avail) != 1 || avail[0].Zone != "z1" {
		t.Errorf("available offerings %v", avail)
	}
	if a := it.Arithmetic(corev1.ResourceMemory).String(); a != "4096Mi - 365Mi kube-reserved - 100Mi eviction = 3631Mi" {
		t.Errorf("memory arithmetic %s", a)
	}
}

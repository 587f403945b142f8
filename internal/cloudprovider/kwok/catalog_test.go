package kwok

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/instancetype"
)

func TestBuiltinCatalogIsValidAndFamiliar(t *testing.T) {
	c := BuiltinCatalog()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	its := c.Build(Options{VMMemoryOverheadPercent: instancetype.DefaultVMMemoryOverheadPercent})
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

func TestReadCatalogRefusesBadInput(t *testing.T) {
	cases := []struct{ name, json, want string }{
		{"not json", `{`, "reading instance-type catalog"},
		{"unknown field", `{"instanceTypes":[{"name":"a","cpu":1,"memoryMiB":1,"pods":1,"ram":4,"offerings":[{"zone":"z","capacityType":"spot","price":1}]}]}`, `unknown field "ram"`},
		{"empty", `{"instanceTypes":[]}`, "instanceTypes is empty"},
		{"no name", `{"instanceTypes":[{"cpu":1,"memoryMiB":1,"pods":1,"offerings":[{"zone":"z","capacityType":"spot","price":1}]}]}`, "instanceTypes[0]: name is empty"},
		{"duplicate", `{"instanceTypes":[{"name":"a","cpu":1,"memoryMiB":1,"pods":1,"offerings":[{"zone":"z","capacityType":"spot","price":1}]},{"name":"a","cpu":1,"memoryMiB":1,"pods":1,"offerings":[{"zone":"z","capacityType":"spot","price":1}]}]}`, "instanceTypes[1] (a): name is used twice"},
		{"zero cpu", `{"instanceTypes":[{"name":"a","cpu":0,"memoryMiB":1,"pods":1,"offerings":[{"zone":"z","capacityType":"spot","price":1}]}]}`, "instanceTypes[0] (a): cpu must be"},
		{"bad arch", `{"instanceTypes":[{"name":"a","cpu":1,"memoryMiB":1,"pods":1,"arch":"x86","offerings":[{"zone":"z","capacityType":"spot","price":1}]}]}`, `arch "x86" must be amd64 or arm64`},
		{"no offerings", `{"instanceTypes":[{"name":"a","cpu":1,"memoryMiB":1,"pods":1,"offerings":[]}]}`, "offerings is empty"},
		{"bad capacity type", `{"instanceTypes":[{"name":"a","cpu":1,"memoryMiB":1,"pods":1,"offerings":[{"zone":"z","capacityType":"preemptible","price":1}]}]}`, `instanceTypes[0] (a).offerings[0]: capacityType "preemptible"`},
		{"negative price", `{"instanceTypes":[{"name":"a","cpu":1,"memoryMiB":1,"pods":1,"offerings":[{"zone":"z","capacityType":"spot","price":-1}]}]}`, "price must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadCatalog(strings.NewReader(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestReadCatalogBuildsTypes(t *testing.T) {
	c, err := ReadCatalog(strings.NewReader(`{"instanceTypes":[{"name":"tiny","family":"t","size":"s","cpu":2,"memoryMiB":4096,"pods":10,"arch":"arm64",
		"offerings":[{"zone":"z1","capacityType":"spot","price":0.01},{"zone":"z2","capacityType":"on-demand","price":0.03,"unavailable":true}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	it := c.Build(Options{})[0]
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

package catalog

import (
	"strings"
	"testing"
)

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
			_, err := Read(strings.NewReader(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestReadCatalogRefusesNegativeExtendedResource(t *testing.T) {
	_, err := Read(strings.NewReader(`{"instanceTypes":[{"name":"a","cpu":1,"memoryMiB":1,"pods":1,"extendedResources":{"vpc.amazonaws.com/efa":-1},"offerings":[{"zone":"z","capacityType":"spot","price":1}]}]}`))
	if err == nil || !strings.Contains(err.Error(), `extendedResources["vpc.amazonaws.com/efa"] must not be negative`) {
		t.Errorf("error %v, want it to name the negative extended resource", err)
	}
}

func TestReadCatalogKeepsExtendedResources(t *testing.T) {
	c, err := Read(strings.NewReader(`{"instanceTypes":[{"name":"trn1.2xlarge","cpu":8,"memoryMiB":32768,"pods":58,"gpus":1,"gpuResource":"aws.amazon.com/neuron","extendedResources":{"aws.amazon.com/neuroncore":2},"offerings":[{"zone":"z","capacityType":"on-demand","price":1.34}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.InstanceTypes[0].ExtendedResources["aws.amazon.com/neuroncore"]; got != 2 {
		t.Errorf("neuroncore = %d, want 2", got)
	}
}

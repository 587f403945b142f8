package awscatalog

import "testing"

func TestZoneRegion(t *testing.T) {
	cases := []struct {
		zone, region string
		ok           bool
	}{
		{"us-east-1a", "us-east-1", true},
		{"us-west-2d", "us-west-2", true},
		{"ap-southeast-4c", "ap-southeast-4", true},
		{"us-gov-west-1a", "us-gov-west-1", true},
		{"cn-northwest-1b", "cn-northwest-1", true},
		// Local Zones and Wavelength Zones belong to their parent region.
		{"us-west-2-lax-1a", "us-west-2", true},
		{"us-east-1-bos-1a", "us-east-1", true},
		{"us-east-1-wl1-bos-wlz-1", "us-east-1", true},
		// Not zone names: a region, a zone ID, kwok's zones, nothing.
		{"us-east-1", "", false},
		{"usw2-az1", "", false},
		{"use1-az4", "", false},
		{"zone-a", "", false},
		{"test-zone-a", "", false},
		{"US-EAST-1A", "", false},
		{"", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.zone, func(t *testing.T) {
			region, ok := ZoneRegion(tc.zone)
			if region != tc.region || ok != tc.ok {
				t.Errorf("ZoneRegion(%q) = %q, %v; want %q, %v", tc.zone, region, ok, tc.region, tc.ok)
			}
		})
	}
	// Every zone of the built-in catalog names its own region.
	d, err := builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Regions {
		for _, z := range r.Zones {
			if got, ok := ZoneRegion(z.Name); !ok || got != r.Name {
				t.Errorf("ZoneRegion(%q) = %q, %v; want %q", z.Name, got, ok, r.Name)
			}
		}
	}
}

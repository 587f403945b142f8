package v1

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestNillableDurationRoundTrip(t *testing.T) {
	cases := []struct {
		in      string
		want    *time.Duration
		wantErr bool
	}{
		{in: `"720h"`, want: ptr(720 * time.Hour)},
		{in: `"1h30m"`, want: ptr(90 * time.Minute)},
		{in: `"0s"`, want: ptr(0)},
		{in: `"Never"`, want: nil},
		{in: `"soon"`, wantErr: true},
		{in: `5`, wantErr: true},
	}
	for _, tc := range cases {
		var d NillableDuration
		err := json.Unmarshal([]byte(tc.in), &d)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%s: err = %v, wantErr %v", tc.in, err, tc.wantErr)
		}
		if tc.wantErr {
			continue
		}
		if (d.Duration == nil) != (tc.want == nil) || (d.Duration != nil && *d.Duration != *tc.want) {
			t.Errorf("%s: got %v, want %v", tc.in, d.Duration, tc.want)
		}
		out, err := json.Marshal(d)
		if err != nil || string(out) != tc.in {
			t.Errorf("%s: marshalled back as %s (%v)", tc.in, out, err)
		}
	}
}

func TestNillableDurationWithoutRawFormats(t *testing.T) {
	d := NillableDuration{Duration: ptr(2 * time.Hour)}
	if out, _ := json.Marshal(d); string(out) != `"2h0m0s"` {
		t.Errorf("got %s", out)
	}
	if out, _ := json.Marshal(NillableDuration{}); string(out) != `"Never"` {
		t.Errorf("got %s", out)
	}
}

func TestNodeClassReferenceGroupKindDropsVersion(t *testing.T) {
	for group, want := range map[string]string{"karpenter.k8s.aws/v1": "karpenter.k8s.aws", "nodewright.dev": "nodewright.dev"} {
		got := (&NodeClassReference{Group: group, Kind: "K", Name: "n"}).GroupKind()
		if got != (schema.GroupKind{Group: want, Kind: "K"}) {
			t.Errorf("%s: got %v", group, got)
		}
	}
}

func ptr(d time.Duration) *time.Duration { return &d }

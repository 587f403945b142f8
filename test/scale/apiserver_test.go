package scale

import (
	"reflect"
	"testing"
)

func TestTopRequests(t *testing.T) {
	before := map[string]float64{"POST pods": 10, "PATCH nodeclaims/status": 5}
	after := map[string]float64{"POST pods": 110, "PATCH nodeclaims/status": 5, "POST events": 40, "GET nodes": 3}
	got, total := topRequests(before, after, 2)
	if want := []string{"POST pods 100", "POST events 40"}; !reflect.DeepEqual(got, want) {
		t.Errorf("top = %v, want %v", got, want)
	}
	if total != 143 {
		t.Errorf("total = %v, want 143", total)
	}
}

func TestParseLabels(t *testing.T) {
	got := parseLabels(`code="201",component="apiserver",resource="pods",subresource="binding",verb="POST"`)
	if got["resource"] != "pods" || got["subresource"] != "binding" || got["verb"] != "POST" {
		t.Errorf("parseLabels = %v", got)
	}
}

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

func TestParseRequests(t *testing.T) {
	page := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
apiserver_request_total{code="200",component="apiserver",dry_run="",group="karpenter.sh",resource="nodeclaims",scope="resource",subresource="status",verb="PATCH",version="v1"} 7
apiserver_request_total{code="409",component="apiserver",dry_run="",group="karpenter.sh",resource="nodeclaims",scope="resource",subresource="status",verb="PATCH",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 5
apiserver_request_duration_seconds_count{resource="pods",verb="POST"} 5
`
	got := parseRequests(page)
	if want := map[string]float64{"PATCH nodeclaims/status": 9, "POST pods": 5}; !reflect.DeepEqual(got.all, want) {
		t.Errorf("all = %v, want %v", got.all, want)
	}
	if want := map[string]float64{"PATCH nodeclaims/status": 2}; !reflect.DeepEqual(got.conflicts, want) {
		t.Errorf("conflicts = %v, want %v", got.conflicts, want)
	}
}

func TestParseLabels(t *testing.T) {
	got := parseLabels(`code="201",component="apiserver",resource="pods",subresource="binding",verb="POST"`)
	if got["resource"] != "pods" || got["subresource"] != "binding" || got["verb"] != "POST" {
		t.Errorf("parseLabels = %v", got)
	}
}

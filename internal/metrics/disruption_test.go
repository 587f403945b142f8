package metrics

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func TestConsolidationType(t *testing.T) {
	for _, c := range []struct {
		reason string
		nodes  int
		want   string
	}{
		{"Empty", 3, "empty"},
		{"Underutilized", 1, "single"},
		{"Underutilized", 2, "multi"},
		{"Drifted", 1, ""},
		{"Expired", 1, ""},
	} {
		if got := ConsolidationType(c.reason, c.nodes); got != c.want {
			t.Errorf("ConsolidationType(%s, %d) = %q, want %q", c.reason, c.nodes, got, c.want)
		}
	}
}

func TestEligibility(t *testing.T) {
	pools := []*karpv1.NodePool{
		{ObjectMeta: metav1.ObjectMeta{Name: "busy"}, Spec: karpv1.NodePoolSpec{Disruption: karpv1.Disruption{ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, Spec: karpv1.NodePoolSpec{Disruption: karpv1.Disruption{ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmpty}}},
	}
	e := NewEligibility(pools)
	e.Add("busy", true, false, false)   // drifted, and consolidatable
	e.Add("busy", false, true, false)   // empty, and consolidatable
	e.Add("quiet", false, false, false) // nothing: WhenEmpty and not empty
	e.Add("quiet", true, true, true)    // protected
	want := map[string]int{"drifted": 1, "empty": 1, "underutilized": 2}
	for r, n := range want {
		if e.counts[r] != n {
			t.Errorf("%s: %d eligible, want %d", r, e.counts[r], n)
		}
	}
	if len(e.counts) != len(want) {
		t.Errorf("counts %v, want %v", e.counts, want)
	}
}

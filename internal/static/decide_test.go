package static

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func pool(replicas int64, nodesLimit string) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "static"}}
	np.Spec.Replicas = &replicas
	if nodesLimit != "" {
		np.Spec.Limits = karpv1.Limits{"nodes": resource.MustParse(nodesLimit)}
	}
	return np
}

// claim is a NodeClaim on node "n-<name>", created age ago; initialized
// unless the name starts with "new".
func claim(name string, age time.Duration, deleting bool) *karpv1.NodeClaim {
	base := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(base.Add(-age))}}
	nc.Status.NodeName = "n-" + name
	if len(name) < 3 || name[:3] != "new" {
		nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	}
	if deleting {
		now := metav1.NewTime(base)
		nc.DeletionTimestamp = &now
	}
	return nc
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name      string
		np        *karpv1.NodePool
		claims    []*karpv1.NodeClaim
		pods      map[string]int
		replacing map[string][]string
		want      Decision
	}{
		{name: "empty pool launches every replica", np: pool(3, ""),
			want: Decision{Have: 0, Create: 3}},
		{name: "at count does nothing", np: pool(2, ""),
			claims: []*karpv1.NodeClaim{claim("a", time.Hour, false), claim("b", time.Hour, false)},
			want:   Decision{Have: 2}},
		{name: "deleting claims do not count", np: pool(2, ""),
			claims: []*karpv1.NodeClaim{claim("a", time.Hour, false), claim("b", time.Hour, true)},
			want:   Decision{Have: 1, Create: 1}},
		{name: "limits.nodes caps the launches and says so", np: pool(5, "3"),
			claims: []*karpv1.NodeClaim{claim("a", time.Hour, false), claim("b", time.Hour, true)},
			want: Decision{Have: 1, Create: 1,
				Held: "limits.nodes is 3 and 2 NodeClaims exist or are on their way; 4 of 5 replicas are missing"}},
		{name: "scale down removes the emptiest, then uninitialized, then newest", np: pool(1, ""),
			claims: []*karpv1.NodeClaim{claim("a", 3*time.Hour, false), claim("b", 2*time.Hour, false),
				claim("c", time.Hour, false), claim("new", time.Minute, false)},
			pods: map[string]int{"n-a": 0, "n-b": 5, "n-c": 0},
			want: Decision{Have: 4, Delete: []string{"new", "c", "a"}}},
		{name: "to zero removes all", np: pool(0, ""),
			claims: []*karpv1.NodeClaim{claim("a", time.Hour, false), claim("b", time.Hour, false)},
			pods:   map[string]int{"n-a": 2},
			want:   Decision{Have: 2, Delete: []string{"b", "a"}}},
		{name: "drift replacement recorded but not yet created: no second launch", np: pool(2, ""),
			claims:    []*karpv1.NodeClaim{claim("a", time.Hour, false), claim("b", time.Hour, false)},
			replacing: map[string][]string{"a": {"static-r1"}},
			want:      Decision{Have: 2}},
		{name: "drift replacement created: the fresh empty replacement is not removed", np: pool(2, ""),
			claims:    []*karpv1.NodeClaim{claim("a", time.Hour, false), claim("b", time.Hour, false), claim("static-r1", 0, false)},
			pods:      map[string]int{"n-a": 3, "n-b": 3},
			replacing: map[string][]string{"a": {"static-r1"}},
			want:      Decision{Have: 2}},
		{name: "scale down while replacing takes neither the replaced nor its replacement", np: pool(1, ""),
			claims:    []*karpv1.NodeClaim{claim("a", time.Hour, false), claim("b", time.Hour, false), claim("static-r1", 0, false)},
			pods:      map[string]int{"n-a": 0, "n-b": 4},
			replacing: map[string][]string{"a": {"static-r1"}},
			want:      Decision{Have: 2, Delete: []string{"b"}}},
		{name: "dynamic pool: nothing", np: &karpv1.NodePool{},
			claims: []*karpv1.NodeClaim{claim("a", time.Hour, false)}, want: Decision{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(Input{NodePool: tc.np, Claims: tc.claims, Pods: tc.pods, Replacing: tc.replacing})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decide:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

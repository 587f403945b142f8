package room

import (
	"reflect"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/room/roomtest"
	"github.com/nodewright/nodewright/internal/snapshot"
)

var now = time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)

// node is a NodeClaim and its Node of 2 CPUs; deleting ones drain.
func node(name string, deleting, initialized bool) (*karpv1.NodeClaim, *corev1.Node) {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	return roomtest.Node(name, alloc, deleting, initialized, now)
}

// pod requests cpu (and 1Gi); created orders the pods, as their creation
// does kube-scheduler's queue.
func pod(name, node, cpu string, created int, priority int32) *corev1.Pod {
	return roomtest.Pod(name, node, cpu, now.Add(time.Duration(created-100)*time.Second), priority)
}

// TestHomeless: a drained pod is homeless when kube-scheduler's order and
// spreading would leave it no ready node, even where packing would.
func TestHomeless(t *testing.T) {
	for _, tc := range []struct {
		name string
		// pods beside the draining node's "d1" and "d2" (on "d").
		pods []*corev1.Pod
		// d1 and d2 are the drained pods' CPU requests.
		d1, d2   string
		priority int32 // the drained pods'
		starting bool  // node b is not initialized yet
		d2First  bool  // d2 was created before d1
		want     []string
	}{
		{name: "room enough", d1: "500m", d2: "500m",
			pods: []*corev1.Pod{pod("on-a", "a", "500m", 1, 0), pod("on-b", "b", "500m", 1, 0)}},
		{
			// a has 1.2 free, b 1.0. Packed, d2 goes to a and d1 to b. In
			// kube-scheduler's order d1 comes first and goes to the emptier
			// a, leaving 0.7 and 1.0 for d2's 1.1.
			name: "spreading strands what packing fits", d1: "500m", d2: "1100m",
			pods: []*corev1.Pod{pod("on-a", "a", "800m", 1, 0), pod("on-b", "b", "1", 1, 0)},
			want: []string{"d2"},
		},
		{name: "the drained pods keep their order", d1: "500m", d2: "1100m", d2First: true,
			pods: []*corev1.Pod{pod("on-a", "a", "800m", 1, 0), pod("on-b", "b", "1", 1, 0)},
		},
		{
			// The drained pods are older than the pending one, but their
			// replacements will be newer.
			name: "a pending pod is ahead in the queue", d1: "100m", d2: "950m",
			pods: []*corev1.Pod{pod("on-a", "a", "1", 1, 0), pod("on-b", "b", "1", 1, 0), pod("pending", "", "1", 50, 0)},
			want: []string{"d2"},
		},
		{name: "a higher priority goes ahead of a pending pod", d1: "100m", d2: "950m", priority: 1000,
			pods: []*corev1.Pod{pod("on-a", "a", "1", 1, 0), pod("on-b", "b", "1", 1, 0), pod("pending", "", "1", 50, 0)},
		},
		{name: "a starting node is no room yet", d1: "100m", d2: "1500m", starting: true,
			pods: []*corev1.Pod{pod("on-a", "a", "1", 1, 0)},
			want: []string{"d2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dc, dn := node("d", true, true)
			ac, an := node("a", false, true)
			bc, bn := node("b", false, !tc.starting)
			first, second := 2, 3
			if tc.d2First {
				first, second = second, first
			}
			c := &snapshot.Cluster{NodeClaims: []*karpv1.NodeClaim{dc, ac, bc}, Nodes: []*corev1.Node{dn, an, bn},
				Pods: append([]*corev1.Pod{pod("d1", "d", tc.d1, first, tc.priority), pod("d2", "d", tc.d2, second, tc.priority)}, tc.pods...)}
			got := Homeless(snapshot.Build(c, snapshot.PoolTypes{}, snapshot.Options{Now: now, MoveDraining: true}))
			var names []string
			for uid := range got {
				names = append(names, string(uid))
			}
			sort.Strings(names)
			if !reflect.DeepEqual(names, tc.want) {
				t.Errorf("homeless %v, want %v", names, tc.want)
			}
		})
	}
}

package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// TestMarkDisplaced: a claim lists the displaced pods planned onto it, keeps
// those it listed that are still pending, and loses the annotation when none
// are left; a claim being created starts from none, whatever its NodePool's
// template annotations say; with marking off (nil displaced) nothing changes.
func TestMarkDisplaced(t *testing.T) {
	pod := func(uid string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}} }
	claim := func(listed string) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"other": "kept"}}}
		if listed != "" {
			nc.Annotations[snapshot.DisplacedPodsAnnotation] = listed
		}
		return nc
	}
	for _, tc := range []struct {
		name      string
		listed    string
		pending   map[types.UID]bool
		pods      []*corev1.Pod
		displaced map[types.UID]bool
		want      string // "" means no annotation
	}{
		{"new claim, some displaced", "", nil, []*corev1.Pod{pod("a"), pod("b"), pod("c")}, map[types.UID]bool{"c": true, "a": true, "z": true}, "a c"},
		{"new claim, none displaced", "", nil, []*corev1.Pod{pod("a")}, map[types.UID]bool{}, ""},
		{"new claim, template's value dropped", "x", nil, []*corev1.Pod{pod("a")}, map[types.UID]bool{}, ""},
		{"marking off: left as it is", "x", nil, []*corev1.Pod{pod("a")}, nil, "x"},
		{"in flight: kept while pending, added", "x y", map[types.UID]bool{"x": true}, []*corev1.Pod{pod("a"), pod("b")}, map[types.UID]bool{"b": true}, "b x"},
		{"in flight: none pending, none added", "x", map[types.UID]bool{}, []*corev1.Pod{pod("a")}, map[types.UID]bool{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := claim(tc.listed)
			markDisplaced(nc, tc.pending, tc.pods, tc.displaced)
			got, ok := nc.Annotations[snapshot.DisplacedPodsAnnotation]
			if tc.want == "" && ok {
				t.Errorf("annotation %q, want none", got)
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("annotation %q, want %q", got, tc.want)
			}
			if nc.Annotations["other"] != "kept" {
				t.Errorf("other annotations changed: %v", nc.Annotations)
			}
		})
	}
}

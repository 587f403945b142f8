package kubescheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestVolumesFollowTheirTopology checks VolumeBinding and VolumeZone: a
// bound volume keeps its pod to the nodes its affinity and zone labels
// allow, a claim waiting for its first consumer to its class's allowed
// topologies, and a claim that cannot bind keeps it off every node.
func TestVolumesFollowTheirTopology(t *testing.T) {
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	zoned := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "zoned"}, VolumeBindingMode: &wffc,
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: corev1.LabelTopologyZone, Values: []string{"z2"}}}}}}
	now := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "now"}, VolumeBindingMode: &immediate}
	pvAffinity := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-affinity"},
		Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z2"}}}}}}}}}
	pvLabel := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-label",
		Labels: map[string]string{corev1.LabelTopologyZone: "z3__z2"}}}
	claim := func(name, volume string, class string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume, StorageClassName: &class}}
	}
	opts := Options{PVs: []*corev1.PersistentVolume{pvAffinity, pvLabel}, StorageClasses: []*storagev1.StorageClass{zoned, now},
		PVCs: []*corev1.PersistentVolumeClaim{claim("bound", "pv-affinity", ""), claim("labelled", "pv-label", ""),
			claim("waiting", "", "zoned"), claim("immediate", "", "now")}}
	uses := func(name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
		}
	}
	cases := []struct{ claim, want, msg string }{
		{claim: "bound", want: "b"},
		{claim: "labelled", want: "b"},
		{claim: "waiting", want: "b"},
		{claim: "immediate", msg: "0/3 nodes are available: 3 pod has unbound immediate PersistentVolumeClaims."},
		{claim: "missing", msg: `0/3 nodes are available: 3 persistentvolumeclaim "missing" not found.`},
	}
	for _, tc := range cases {
		t.Run(tc.claim, func(t *testing.T) {
			// a, the emptiest, is in z1; b in z2; c, in z2, is full.
			nodes := []*corev1.Node{node("a", "z1", "8", "32Gi"), node("b", "z2", "8", "32Gi"), node("c", "z2", "1", "1Gi")}
			s := NewSnapshot(nodes, []*corev1.Pod{pod("x", "2", "2Gi", on("b"))}, opts)
			d := s.Schedule(pod("p", "1", "1Gi", uses(tc.claim)))
			if d.Node != tc.want {
				t.Fatalf("node %q, want %q (%s)", d.Node, tc.want, d.Message())
			}
			if tc.want == "" && d.Message() != tc.msg {
				t.Errorf("message %q, want %q", d.Message(), tc.msg)
			}
		})
	}
}

package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
)

// A NodeClaim must pass the CRD's validation whatever the pods asked for:
// requirements on kubernetes.io/hostname or the karpenter.sh domain (other
// than the capacity type and NodePool) are left out.
func TestNodeClaimForLeavesOutRestrictedKeys(t *testing.T) {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	reqs := scheduling.NewRequirements(
		scheduling.NewRequirement(corev1.LabelHostname, corev1.NodeSelectorOpNotIn, "node-a"),
		scheduling.NewRequirement("karpenter.sh/registered", corev1.NodeSelectorOpExists),
		scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot"),
		scheduling.NewRequirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "p"),
		scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a"),
	)
	nc := NodeClaimFor(np, &solver.NewClaim{NodePool: "p", Requirements: reqs})
	got := map[string]bool{}
	for _, r := range nc.Spec.Requirements {
		got[r.Key] = true
	}
	for key, want := range map[string]bool{
		corev1.LabelHostname: false, "karpenter.sh/registered": false,
		karpv1.CapacityTypeLabelKey: true, karpv1.NodePoolLabelKey: true, corev1.LabelTopologyZone: true,
	} {
		if got[key] != want {
			t.Errorf("requirement on %s kept = %v, want %v (requirements %v)", key, got[key], want, nc.Spec.Requirements)
		}
	}
}

// Under BestEffort a NodeClaim says whether its minValues were relaxed, and
// carries the relaxed minValues in its requirements; under Strict it says
// nothing.
func TestNodeClaimForMinValuesRelaxed(t *testing.T) {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	one := 1
	relaxed, kept := true, false
	for _, tc := range []struct {
		name    string
		relaxed *bool
		want    string // annotation; "" for none
	}{
		{"Strict", nil, ""},
		{"BestEffort, relaxed", &relaxed, "true"},
		{"BestEffort, met as written", &kept, "false"},
	} {
		reqs := scheduling.NewRequirements(scheduling.NewRequirementWithMinValues(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, &one, "m5.large"))
		nc := NodeClaimFor(np, &solver.NewClaim{NodePool: "p", Requirements: reqs, MinValuesRelaxed: tc.relaxed})
		got, ok := nc.Annotations[karpv1.NodeClaimMinValuesRelaxedAnnotation]
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: annotation %q (set %v), want %q", tc.name, got, ok, tc.want)
		}
		for _, r := range nc.Spec.Requirements {
			if r.Key == corev1.LabelInstanceTypeStable && (r.MinValues == nil || *r.MinValues != 1) {
				t.Errorf("%s: instance-type minValues %v, want the claim's 1", tc.name, r.MinValues)
			}
		}
	}
}

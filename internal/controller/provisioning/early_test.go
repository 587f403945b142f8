package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/solver"
)

func TestFullClaims(t *testing.T) {
	// 4 vCPU, 16Gi, 110 pods, no overhead: allocatable is capacity.
	it := &instancetype.InstanceType{Name: "m.xlarge", Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}}
	claim := func(name, cpu, mem, pods string, types ...*instancetype.InstanceType) *solver.NewClaim {
		return &solver.NewClaim{Hostname: name, InstanceTypes: types, Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse(pods)}}
	}
	big := &instancetype.InstanceType{Name: "m.4xlarge", Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")}}
	aimed := func(c *solver.NewClaim, aim *instancetype.InstanceType, short bool) *solver.NewClaim {
		c.Aim, c.Short = aim, short
		return c
	}
	claims := []*solver.NewClaim{
		claim("cpu-full", "3800m", "2Gi", "8", it),     // 95% of the CPU
		claim("half", "2", "8Gi", "4", it),             // half of everything
		claim("memory-full", "1", "15Gi", "3", it),     // 94% of the memory
		claim("pods-full", "1", "1Gi", "105", it),      // 95% of the pod slots
		claim("just-under", "3500m", "14Gi", "10", it), // 87.5% at most
		claim("no-types", "4", "16Gi", "10"),           // nothing to launch as
		// Sized for a 4xlarge, a quarter full: it launches as the xlarge
		// it fills, yet later pods would have filled the 4xlarge.
		aimed(claim("quarter-of-aim", "3800m", "15Gi", "30", it, big), big, false),
		aimed(claim("full-aim", "15", "20Gi", "30", big), big, false),
		// Sized small because few pods of its kind were left.
		aimed(claim("short", "3800m", "2Gi", "8", it), it, true),
	}
	for _, tc := range []struct {
		minFill    float64
		full, rest []string
	}{
		{0.9, []string{"cpu-full", "memory-full", "pods-full", "full-aim"}, []string{"half", "just-under", "no-types", "quarter-of-aim", "short"}},
		{0.5, []string{"cpu-full", "half", "memory-full", "pods-full", "just-under", "full-aim"}, []string{"no-types", "quarter-of-aim", "short"}},
		{0.2, []string{"cpu-full", "half", "memory-full", "pods-full", "just-under", "quarter-of-aim", "full-aim"}, []string{"no-types", "short"}},
		{1.01, nil, []string{"cpu-full", "half", "memory-full", "pods-full", "just-under", "no-types", "quarter-of-aim", "full-aim", "short"}},
	} {
		full, rest := FullClaims(claims, tc.minFill)
		if got := names(full); !equal(got, tc.full) {
			t.Errorf("minFill %.2f: full %v, want %v", tc.minFill, got, tc.full)
		}
		if got := names(rest); !equal(got, tc.rest) {
			t.Errorf("minFill %.2f: rest %v, want %v", tc.minFill, got, tc.rest)
		}
	}
}

func names(cs []*solver.NewClaim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Hostname)
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package provisioning

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/solver"
)

func TestLaunchable(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	// 4 vCPU, 16Gi, 110 pods, no overhead: allocatable is capacity.
	it := &instancetype.InstanceType{Name: "m.xlarge", Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}}
	since := map[types.UID]time.Time{}
	claim := func(name, cpu, mem, pods string, its ...*instancetype.InstanceType) *solver.NewClaim {
		// Created long ago (kube-scheduler displaced it, say), held 9s.
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(name), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
		since[p.UID] = now.Add(-9 * time.Second)
		return &solver.NewClaim{Hostname: name, InstanceTypes: its, Pods: []*corev1.Pod{p}, Requests: corev1.ResourceList{
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
	// A part-filled claim with a pod held back for the 10s: it goes.
	waitedOut := claim("half-waited", "2", "8Gi", "4", it)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "waited-out", CreationTimestamp: metav1.NewTime(now)}}
	since[p.UID] = now.Add(-10 * time.Second)
	waitedOut.Pods = append(waitedOut.Pods, p)
	claims = append(claims, waitedOut)
	for _, tc := range []struct {
		minFill    float64
		full, rest []string
		waitedOut  int // launched part-filled for the pod held 10s
	}{
		{0.9, []string{"cpu-full", "memory-full", "pods-full", "full-aim", "half-waited"}, []string{"half", "just-under", "no-types", "quarter-of-aim", "short"}, 1},
		{0.5, []string{"cpu-full", "half", "memory-full", "pods-full", "just-under", "full-aim", "half-waited"}, []string{"no-types", "quarter-of-aim", "short"}, 0},
		{0.2, []string{"cpu-full", "half", "memory-full", "pods-full", "just-under", "quarter-of-aim", "full-aim", "half-waited"}, []string{"no-types", "short"}, 0},
		{1.01, []string{"half-waited"}, []string{"cpu-full", "half", "memory-full", "pods-full", "just-under", "no-types", "quarter-of-aim", "full-aim", "short"}, 1},
	} {
		full, rest, waited := Launchable(claims, Hold{MinFill: tc.minFill, MaxWait: 10 * time.Second, Now: now, Since: since})
		if got := names(full); !slices.Equal(got, tc.full) {
			t.Errorf("minFill %.2f: full %v, want %v", tc.minFill, got, tc.full)
		}
		if got := names(rest); !slices.Equal(got, tc.rest) {
			t.Errorf("minFill %.2f: rest %v, want %v", tc.minFill, got, tc.rest)
		}
		if waited != tc.waitedOut {
			t.Errorf("minFill %.2f: %d launched for a pod held too long, want %d", tc.minFill, waited, tc.waitedOut)
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

// A pod's wait starts when it is first held back, and lasts while it is.
func TestHeldSince(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	pod := func(uid string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}} }
	since := HeldSince(nil, []*solver.NewClaim{{Pods: []*corev1.Pod{pod("a"), pod("b")}}}, t0)
	since = HeldSince(since, []*solver.NewClaim{{Pods: []*corev1.Pod{pod("b")}}, {Pods: []*corev1.Pod{pod("c")}}}, t0.Add(time.Second))
	want := map[types.UID]time.Time{"b": t0, "c": t0.Add(time.Second)}
	if len(since) != len(want) || !since["b"].Equal(want["b"]) || !since["c"].Equal(want["c"]) {
		t.Fatalf("held since %v, want %v (a launched, b held on, c held anew)", since, want)
	}
}

package solver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

func TestRequestsRemembersByUIDThenObject(t *testing.T) {
	pod := func(uid, cpu string, port int32) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
		p.UID = types.UID(uid)
		if port > 0 {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: port}}
		}
		return p
	}
	cpu := func(f podFacts) string { q := f.requests[corev1.ResourceCPU]; return q.String() }
	r := NewRequests()
	a := pod("a", "500m", 8080)
	if got := cpu(r.facts(a)); got != "500m" {
		t.Fatalf("first read: cpu %s, want 500m", got)
	}
	if f := r.facts(a); len(f.ports) != 1 || f.ports[0].port != 8080 || f.ports[0].ip != "0.0.0.0" || f.ports[0].protocol != corev1.ProtocolTCP {
		t.Fatalf("host ports %+v, want 0.0.0.0:8080/TCP", f.ports)
	}
	// A copy of the pod (made pending for a simulation) is the same pod.
	cp := a.DeepCopy()
	cp.Spec.NodeName = ""
	if got := cpu(r.facts(cp)); got != "500m" {
		t.Fatalf("copy: cpu %s, want 500m", got)
	}
	// Remembered: a change to the pod is not seen until it is forgotten.
	a.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	if got := cpu(r.facts(a)); got != "500m" {
		t.Fatalf("remembered: cpu %s, want 500m", got)
	}
	r.Forget(a)
	if got := cpu(r.facts(a)); got != "2" {
		t.Fatalf("after Forget: cpu %s, want 2", got)
	}
	// Pods without a UID are told apart by object.
	x, y := pod("", "100m", 0), pod("", "300m", 0)
	if cpu(r.facts(x)) != "100m" || cpu(r.facts(y)) != "300m" {
		t.Fatalf("pods without UID mixed up: %s, %s", cpu(r.facts(x)), cpu(r.facts(y)))
	}
	if r.Len() != 3 {
		t.Fatalf("Len %d, want 3 (a, x, y)", r.Len())
	}
	r.Forget(x)
	if r.Len() != 2 {
		t.Fatalf("Len after forgetting x %d, want 2", r.Len())
	}
	// A nil memo reads every time.
	var none *Requests
	if got := cpu(none.facts(y)); got != "300m" {
		t.Fatalf("nil memo: cpu %s, want 300m", got)
	}
}

func TestRequestsRereadsChangedPodsAndPrunesGoneOnes(t *testing.T) {
	pod := func(uid, rv, cpu string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
		p.UID, p.ResourceVersion = types.UID(uid), rv
		return p
	}
	cpu := func(r *Requests, p *corev1.Pod) string { q := r.Of(p)[corev1.ResourceCPU]; return q.String() }
	r := NewRequests()
	a := pod("a", "1", "500m")
	if got := cpu(r, a); got != "500m" {
		t.Fatalf("first read: cpu %s, want 500m", got)
	}
	// The API server changed the pod (an in-place resize): a new
	// resourceVersion is read again, with no Forget.
	if got := cpu(r, pod("a", "2", "1")); got != "1" {
		t.Fatalf("new resourceVersion: cpu %s, want 1", got)
	}
	// A copy at the same resourceVersion is the same pod.
	if got := cpu(r, pod("a", "2", "9")); got != "1" {
		t.Fatalf("same resourceVersion: cpu %s, want the remembered 1", got)
	}
	// Loops: b is read in every loop, a (above) and c only in the first, x
	// (no UID) in the first two. Prune keeps what the last two loops read:
	// a and c go at the end of the third loop, x at the end of the fourth.
	b, c, x := pod("b", "1", "100m"), pod("c", "1", "200m"), pod("", "", "300m")
	for loop, want := range []int{4, 4, 2, 1, 1} {
		cpu(r, b)
		if loop == 0 {
			cpu(r, c)
		}
		if loop < 2 {
			cpu(r, x)
		}
		r.Prune()
		if got := r.Len(); got != want {
			t.Fatalf("after loop %d: %d remembered, want %d", loop, got, want)
		}
	}
}

package solver

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// maxResources bounds the resources one solve tracks: cpu, memory,
// ephemeral-storage and pods, plus extended resources that pods request. A
// fixed array keeps the hot loop free of maps and allocations.
const maxResources = 16

// vec holds resource amounts: CPU in millicores, the rest in base units.
type vec [maxResources]int64

// resourceIndex interns resource names to vec positions.
type resourceIndex struct {
	names []corev1.ResourceName
	pos   map[corev1.ResourceName]int
}

func newResourceIndex() *resourceIndex {
	ri := &resourceIndex{pos: map[corev1.ResourceName]int{}}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods} {
		ri.add(n)
	}
	return ri
}

const podsIdx = 3

// add interns a name; false when the index is full.
func (ri *resourceIndex) add(n corev1.ResourceName) bool {
	if _, ok := ri.pos[n]; ok {
		return true
	}
	if len(ri.names) == maxResources {
		return false
	}
	ri.pos[n] = len(ri.names)
	ri.names = append(ri.names, n)
	return true
}

// vec converts a list; names the index does not know are dropped, which is
// right for capacities (nobody asks for them) and checked for requests.
func (ri *resourceIndex) vec(rl corev1.ResourceList) vec {
	var v vec
	for n, q := range rl {
		if i, ok := ri.pos[n]; ok {
			v[i] = amount(n, q)
		}
	}
	return v
}

// list converts back, leaving out zeros.
func (ri *resourceIndex) list(v vec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, n := range ri.names {
		if v[i] == 0 {
			continue
		}
		if n == corev1.ResourceCPU {
			out[n] = *resource.NewMilliQuantity(v[i], resource.DecimalSI)
		} else if n == corev1.ResourceMemory || n == corev1.ResourceEphemeralStorage {
			out[n] = *resource.NewQuantity(v[i], resource.BinarySI)
		} else {
			out[n] = *resource.NewQuantity(v[i], resource.DecimalSI)
		}
	}
	return out
}

// unknown lists requested names that the index could not take.
func (ri *resourceIndex) unknown(rl corev1.ResourceList) []string {
	var out []string
	for n := range rl {
		if _, ok := ri.pos[n]; !ok {
			out = append(out, string(n))
		}
	}
	sort.Strings(out)
	return out
}

func amount(n corev1.ResourceName, q resource.Quantity) int64 {
	if n == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func (v *vec) add(o *vec) {
	for i := range v {
		v[i] += o[i]
	}
}

func (v *vec) sub(o *vec) {
	for i := range v {
		v[i] -= o[i]
	}
}

// fits reports whether need ≤ have in every resource; the first short
// resource's index is returned when not.
func fits(need, have *vec) (bool, int) {
	for i := range need {
		if need[i] > have[i] {
			return false, i
		}
	}
	return true, -1
}

// fitsSum reports whether a+b ≤ have without building the sum.
func fitsSum(a, b, have *vec) bool {
	for i := range a {
		if a[i]+b[i] > have[i] {
			return false
		}
	}
	return true
}

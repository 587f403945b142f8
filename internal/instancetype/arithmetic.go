package instancetype

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Arithmetic is how one resource's allocatable follows from capacity, term by
// term, so that a person can check it.
type Arithmetic struct {
	Resource        corev1.ResourceName
	Capacity        resource.Quantity
	CapacitySource  string // "" for the catalog's nominal capacity
	VMOverhead      resource.Quantity
	VMPercent       float64
	KubeReserved    resource.Quantity
	SystemReserved  resource.Quantity
	Eviction        resource.Quantity
	Allocatable     resource.Quantity
	AllocatableZero bool // the overheads exceed the capacity
}

// Arithmetic returns the allocatable arithmetic of one resource.
func (it *InstanceType) Arithmetic(name corev1.ResourceName) Arithmetic {
	a := Arithmetic{
		Resource:       name,
		Capacity:       it.Capacity[name],
		CapacitySource: it.CapacitySource[name],
		KubeReserved:   it.Overhead.KubeReserved[name],
		SystemReserved: it.Overhead.SystemReserved[name],
		Eviction:       it.Overhead.EvictionThreshold[name],
	}
	if name == corev1.ResourceMemory {
		a.VMOverhead = it.VMMemoryOverhead()
		if !a.VMOverhead.IsZero() {
			a.VMPercent = it.Overhead.VMMemoryPercent
		}
	}
	alloc := a.Capacity.DeepCopy()
	for _, q := range []resource.Quantity{a.VMOverhead, a.KubeReserved, a.SystemReserved, a.Eviction} {
		alloc.Sub(q)
	}
	if alloc.Sign() < 0 {
		alloc = *resource.NewQuantity(0, a.Capacity.Format)
		a.AllocatableZero = true
	}
	a.Allocatable = alloc
	return a
}

// String writes the arithmetic in the resource's natural unit, e.g.
// "262144Mi - 19661Mi (7.5%) - 2829Mi kube-reserved - 100Mi eviction = 239554Mi".
func (a Arithmetic) String() string {
	var b strings.Builder
	b.WriteString(Format(a.Resource, a.Capacity))
	if a.CapacitySource != "" {
		fmt.Fprintf(&b, " (%s)", a.CapacitySource)
	}
	term := func(q resource.Quantity, label string) {
		if !q.IsZero() {
			fmt.Fprintf(&b, " - %s %s", Format(a.Resource, q), label)
		}
	}
	if !a.VMOverhead.IsZero() {
		fmt.Fprintf(&b, " - %s (%s)", Format(a.Resource, a.VMOverhead), percent(a.VMPercent))
	}
	term(a.KubeReserved, "kube-reserved")
	term(a.SystemReserved, "system-reserved")
	term(a.Eviction, "eviction")
	fmt.Fprintf(&b, " = %s", Format(a.Resource, a.Allocatable))
	if a.AllocatableZero {
		b.WriteString(" (overheads exceed capacity)")
	}
	return b.String()
}

func percent(p float64) string {
	s := fmt.Sprintf("%.4f", p*100)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}

// Format writes a quantity in the unit people use for the resource: millicores
// for CPU below a core or when fractional, Mi for memory and storage, plain
// numbers otherwise.
func Format(name corev1.ResourceName, q resource.Quantity) string {
	switch name {
	case corev1.ResourceCPU:
		m := q.MilliValue()
		if m%1000 == 0 {
			return fmt.Sprintf("%d", m/1000)
		}
		return fmt.Sprintf("%dm", m)
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourceStorage:
		v := q.Value()
		const mi = 1 << 20
		if v%mi == 0 {
			return fmt.Sprintf("%dMi", v/mi)
		}
		return fmt.Sprintf("%.1fMi", math.Round(float64(v)/mi*10)/10)
	default:
		return q.String()
	}
}

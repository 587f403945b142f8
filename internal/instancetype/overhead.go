package instancetype

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// KubeReserved is the kubelet reservation that EKS-style images compute from
// the machine's size, which Karpenter also assumes: memory 11Mi per pod plus
// 255Mi; CPU 6% of the first core, 1% of the second, 0.5% of the next two and
// 0.25% of the rest.
func KubeReserved(cpuCores int64, maxPods int64) corev1.ResourceList {
	// In tenths of a millicore, so that 0.25% of a core (2.5m) stays exact.
	tenths := int64(0)
	for core := int64(1); core <= cpuCores; core++ {
		switch {
		case core == 1:
			tenths += 600
		case core == 2:
			tenths += 100
		case core <= 4:
			tenths += 50
		default:
			tenths += 25
		}
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity((tenths+9)/10, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity((11*maxPods+255)<<20, resource.BinarySI),
	}
}

// DefaultEvictionThreshold is the kubelet's default hard eviction threshold
// for memory.
func DefaultEvictionThreshold() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")}
}

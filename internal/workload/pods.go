package workload

import (
	"fmt"
	"math/rand"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DiversePods is Karpenter's scheduling benchmark mix: n pods in five equal
// classes (generic; zone topology spread; hostname topology spread; required
// self pod affinity on zone; required pod anti-affinity on hostname among the
// whole class), CPU from {100,250,500,1000,1500}m, memory from
// {100,256,512,1024,2048,4096}Mi, label values from {a..g}. As there, a spread
// pod's own label and its selector's are drawn independently.
func DiversePods(n int, seed int64) []*corev1.Pod {
	g := &gen{r: rand.New(rand.NewSource(seed))}
	per := n / 5
	var pods []*corev1.Pod
	for i := 0; i < per; i++ {
		pods = append(pods, g.pod("generic", map[string]string{"my-label": g.value()}, nil, nil))
	}
	for _, key := range []string{corev1.LabelTopologyZone, corev1.LabelHostname} {
		for i := 0; i < per; i++ {
			tsc := []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": g.value()}},
			}}
			pods = append(pods, g.pod("spread", map[string]string{"my-label": g.value()}, tsc, nil))
		}
	}
	for i := 0; i < per; i++ {
		l := map[string]string{"my-affinity": g.value()}
		aff := &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: l}, TopologyKey: corev1.LabelTopologyZone,
		}}}}
		pods = append(pods, g.pod("affinity", l, nil, aff))
	}
	for i := 0; i < per; i++ {
		l := map[string]string{"app": "nginx"}
		aff := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: l}, TopologyKey: corev1.LabelHostname,
		}}}}
		pods = append(pods, g.pod("anti", l, nil, aff))
	}
	return pods
}

type gen struct {
	r *rand.Rand
	n int
}

func (g *gen) value() string { return string(rune('a' + g.r.Intn(7))) }

func (g *gen) pod(kind string, labels map[string]string, tsc []corev1.TopologySpreadConstraint, aff *corev1.Affinity) *corev1.Pod {
	cpu := []int{100, 250, 500, 1000, 1500}[g.r.Intn(5)]
	mem := []int{100, 256, 512, 1024, 2048, 4096}[g.r.Intn(6)]
	g.n++
	name := fmt.Sprintf("%s-%d", kind, g.n)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: labels},
		Spec: corev1.PodSpec{
			Affinity:                  aff,
			TopologySpreadConstraints: tsc,
			Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(fmt.Sprintf("%dm", cpu)),
				corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dMi", mem)),
			}}}},
		},
	}
}

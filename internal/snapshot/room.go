package snapshot

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// RoomFor keeps the nominated pods an initialized node still has room for,
// after the pods bound to it, and returns them with the rest. kube-scheduler
// does not follow the plan: under a burst it binds whichever pods come first
// to whichever nodes are ready. Once the pods bound to a node leave too little
// room for the pods still nominated to it, the surplus can never be bound
// there, and holding their nominations until the grace runs out only delays
// the room they need elsewhere by that long. Larger pods keep their room
// first: smaller ones are likelier to fit where others left gaps. Build
// plans the released pods again (Options.ReleaseDisplaced), and the
// lifecycle controller writes status.nominatedNodeName only for the kept.
func RoomFor(allocatable corev1.ResourceList, bound, nominated []*corev1.Pod) (keep, release []*corev1.Pod) {
	if len(nominated) == 0 || len(allocatable) == 0 {
		return nominated, nil
	}
	free := allocatable.DeepCopy()
	for _, p := range bound {
		take(free, resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))
	}
	takePods(free, len(bound))

	type sized struct {
		pod *corev1.Pod
		req corev1.ResourceList
	}
	pods := make([]sized, len(nominated))
	for i, p := range nominated {
		pods[i] = sized{p, resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})}
	}
	slices.SortStableFunc(pods, func(a, b sized) int {
		return cmp.Or(-a.req.Cpu().Cmp(*b.req.Cpu()), -a.req.Memory().Cmp(*b.req.Memory()), cmp.Compare(a.pod.UID, b.pod.UID))
	})
	for _, s := range pods {
		if !fitsIn(s.req, free) {
			release = append(release, s.pod)
			continue
		}
		take(free, s.req)
		takePods(free, 1)
		keep = append(keep, s.pod)
	}
	return keep, release
}

// fitsIn reports whether free holds every positive request and one more pod.
// A resource the node does not list at all holds nothing.
func fitsIn(req, free corev1.ResourceList) bool {
	for name, q := range req {
		if q.Sign() <= 0 {
			continue
		}
		if f, ok := free[name]; !ok || f.Cmp(q) < 0 {
			return false
		}
	}
	if f, ok := free[corev1.ResourcePods]; ok && f.Sign() <= 0 {
		return false
	}
	return true
}

// take subtracts a pod's requests from free.
func take(free, req corev1.ResourceList) {
	for name, q := range req {
		f := free[name]
		f.Sub(q)
		free[name] = f
	}
}

// takePods counts n more pods against the node's pod limit, if it has one.
func takePods(free corev1.ResourceList, n int) {
	if f, ok := free[corev1.ResourcePods]; ok {
		f.Sub(*resource.NewQuantity(int64(n), resource.DecimalSI))
		free[corev1.ResourcePods] = f
	}
}

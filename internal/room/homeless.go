package room

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/kubescheduler"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// Homeless returns the pods of draining nodes (res built with
// snapshot.Options.MoveDraining) that kube-scheduler would find no ready
// node for if they were evicted now. It plays kube-scheduler's default
// profile (internal/kubescheduler) over the ready nodes: first the pods
// pending now, which are ahead in its queue, then the replacements of the
// drained pods, which the workload controllers create after them (within
// a priority; a higher priority goes first, as in kube-scheduler's
// queue). Nodes still starting are left out: a pod whose only room is on
// one must wait for it. Pending pods that fit no ready node take nothing.
func Homeless(res *snapshot.Result) map[types.UID]bool {
	if len(res.Draining) == 0 {
		return nil
	}
	in := res.Input
	var nodes []*corev1.Node
	var bound, queue, drained []*corev1.Pod
	var latest metav1.Time
	for _, n := range in.Nodes {
		for _, p := range n.Pods {
			if latest.Before(&p.CreationTimestamp) {
				latest = p.CreationTimestamp
			}
		}
		if n.InFlight {
			for _, p := range n.Pods {
				if p.Spec.NodeName == "" {
					queue = append(queue, p) // nominated: binds wherever it fits
				}
			}
			continue
		}
		nodes = append(nodes, schedulerNode(n))
		for _, p := range n.Pods {
			if p.Spec.NodeName != n.Name {
				// Nominated to the node after it initialized: counted there,
				// as the solver does.
				cp := *p
				cp.Spec.NodeName = n.Name
				p = &cp
			}
			bound = append(bound, p)
		}
	}
	for _, p := range in.Pods {
		if _, ok := res.Draining[p.UID]; ok {
			drained = append(drained, p)
		} else {
			queue = append(queue, p)
		}
		if latest.Before(&p.CreationTimestamp) {
			latest = p.CreationTimestamp
		}
	}
	// A replacement is a new pod, created after every pod pending now; the
	// drained pods keep their own order among themselves.
	sort.SliceStable(drained, func(i, j int) bool { return kubescheduler.Less(drained[i], drained[j]) })
	for i, p := range drained {
		cp := *p
		cp.CreationTimestamp = metav1.NewTime(latest.Add(time.Duration(i + 1)))
		drained[i] = &cp
	}
	queue = append(queue, drained...)
	sort.SliceStable(queue, func(i, j int) bool { return kubescheduler.Less(queue[i], queue[j]) })

	s := kubescheduler.NewSnapshot(nodes, bound, kubescheduler.Options{Namespaces: in.Namespaces,
		PVCs: in.Volumes.PersistentVolumeClaims, PVs: in.Volumes.PersistentVolumes, StorageClasses: in.Volumes.StorageClasses})
	out := map[types.UID]bool{}
	for _, p := range queue {
		d := s.Schedule(p)
		if d.Node == "" {
			if _, ok := res.Draining[p.UID]; ok {
				out[p.UID] = true
			}
			continue
		}
		s.Assume(p, d.Node)
	}
	return out
}

// schedulerNode is a ready solver node as kube-scheduler sees it. A node
// being deleted carries the disrupted taint, should the snapshot predate
// it: it takes no new pod.
func schedulerNode(n solver.Node) *corev1.Node {
	taints := n.Taints
	if n.Deleting {
		taints = append(append([]corev1.Taint(nil), n.Taints...), karpv1.DisruptedNoScheduleTaint)
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels},
		Spec:   corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Allocatable: n.Allocatable, Capacity: n.Allocatable}}
}

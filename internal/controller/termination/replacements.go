package termination

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/internal/disruption/protect"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// awaitedReplacements are stand-ins for the replacements of pods a drain
// has evicted that the snapshot does not show yet: a pod terminating on a
// node being deleted, owned by a controller (not a DaemonSet), that no
// pending pod of the same controller, created since its eviction, answers
// for. Between an eviction and the cache showing the ReplicaSet's new pod
// there are tens of milliseconds to seconds; a room check in that window
// would see the evicted pod's room as free, evict the next pod into it, and
// kube-scheduler would then give it to the replacement that came first,
// leaving the second with nowhere to go. Counting the stand-ins as pending
// closes that window. A stand-in counted while the real replacement is
// also seen (created more than a second before the eviction was recorded)
// only makes the check hold a pod a little longer.
func awaitedReplacements(res *snapshot.Result) []*corev1.Pod {
	type owner = types.UID
	evicted := map[owner][]*corev1.Pod{}
	for _, n := range res.Input.Nodes {
		if !n.Deleting {
			continue
		}
		for _, p := range n.Pods {
			ref := metav1.GetControllerOf(p)
			if p.DeletionTimestamp == nil || ref == nil || ref.Kind == "DaemonSet" || protect.Mirror(p) ||
				p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			evicted[ref.UID] = append(evicted[ref.UID], p)
		}
	}
	if len(evicted) == 0 {
		return nil
	}
	var pending []*corev1.Pod
	for _, p := range res.Input.Pods {
		if _, drained := res.Draining[p.UID]; !drained && p.DeletionTimestamp == nil {
			pending = append(pending, p)
		}
	}
	var out []*corev1.Pod
	answered := map[types.UID]bool{}
	for uid, pods := range evicted {
		for _, p := range pods {
			at := evictedAt(p)
			found := false
			for _, q := range pending {
				ref := metav1.GetControllerOf(q)
				if ref != nil && ref.UID == uid && !answered[q.UID] && !q.CreationTimestamp.Time.Before(at.Add(-time.Second)) {
					answered[q.UID], found = true, true
					break
				}
			}
			if found {
				continue
			}
			cp := p.DeepCopy()
			cp.UID = p.UID + "-replacement"
			cp.Name = p.Name + "-replacement"
			cp.Spec.NodeName = ""
			cp.DeletionTimestamp, cp.DeletionGracePeriodSeconds = nil, nil
			cp.CreationTimestamp = metav1.NewTime(at)
			cp.Status = corev1.PodStatus{Phase: corev1.PodPending}
			out = append(out, cp)
		}
	}
	return out
}

// evictedAt is when a pod's deletion was asked for: its deletionTimestamp
// less the grace period the API server added to it.
func evictedAt(p *corev1.Pod) time.Time {
	at := p.DeletionTimestamp.Time
	if g := p.DeletionGracePeriodSeconds; g != nil {
		at = at.Add(-time.Duration(*g) * time.Second)
	}
	return at
}

package simulate

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/manifests"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// addPod puts a pod into the cluster. An unbound pod is pending and, as
// kube-scheduler would have, marked unschedulable, which is what makes
// the provisioner plan for it.
func (e *Engine) addPod(p *corev1.Pod, owner string) {
	if p.CreationTimestamp.IsZero() {
		p.CreationTimestamp = metav1.NewTime(e.now)
	}
	st := &podState{owner: owner}
	if d, ok := p.Annotations[manifests.DurationAnnotation]; ok {
		if v, err := parseDuration(d); err == nil && v > 0 {
			st.runFor = v
		}
	}
	e.podState[p.UID] = st
	e.pods = append(e.pods, p)
	if p.Spec.NodeName != "" && e.nodeByName[p.Spec.NodeName] != nil {
		e.markRunning(p)
		e.podEvent(p.Spec.NodeName)
		return
	}
	p.Spec.NodeName = ""
	e.markPending(p)
}

// markPending makes p a pending pod kube-scheduler found no node for.
func (e *Engine) markPending(p *corev1.Pod) {
	p.Spec.NodeName = ""
	p.Status.Phase = corev1.PodPending
	p.Status.StartTime = nil
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.NewTime(e.now)}}
	if st := e.podState[p.UID]; st != nil {
		st.endsAt = time.Time{}
	}
	if !snapshot.IsDaemonSetPod(p) {
		e.pendingAppeared()
		e.scheduleChanged = true
	}
}

// markRunning makes p a running, ready pod on its node.
func (e *Engine) markRunning(p *corev1.Pod) {
	now := metav1.NewTime(e.now)
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	if st := e.podState[p.UID]; st != nil && st.runFor > 0 {
		st.endsAt = e.now.Add(st.runFor)
		if e.nextJobEnd.IsZero() || st.endsAt.Before(e.nextJobEnd) {
			e.nextJobEnd = st.endsAt
		}
	}
}

// bind is kube-scheduler binding p to node; scheduleLoop decides where.
func (e *Engine) bind(p *corev1.Pod, node string) {
	p.Spec.NodeName = node
	e.markRunning(p)
	e.podEvent(node)
	e.rec.bound++
}

// unbind takes p off its node and makes it pending again, as when its
// controller replaces an evicted pod.
func (e *Engine) unbind(p *corev1.Pod) {
	node := p.Spec.NodeName
	e.markPending(p)
	if node != "" {
		e.podEvent(node)
	}
}

// remove deletes p; the pod list is compacted at the end of the step.
func (e *Engine) remove(p *corev1.Pod) {
	if node := p.Spec.NodeName; node != "" {
		e.podEvent(node)
	}
	p.Status.Phase = corev1.PodSucceeded
	p.DeletionTimestamp = &metav1.Time{Time: e.now}
	delete(e.podState, p.UID)
	e.schedCache.Forget(p.UID)
	e.solveMemo.Forget(p)
	e.provisionChanged, e.removedPods, e.scheduleChanged = true, true, true
}

// compactPods drops removed pods from the list.
func (e *Engine) compactPods() {
	kept := e.pods[:0]
	for _, p := range e.pods {
		if p.DeletionTimestamp == nil {
			kept = append(kept, p)
		}
	}
	for i := len(kept); i < len(e.pods); i++ {
		e.pods[i] = nil
	}
	e.pods = kept
}

// podEvent records that a pod came to or left a node: the claim's
// lastPodEventTime, from which consolidateAfter counts.
func (e *Engine) podEvent(node string) {
	n := e.nodeByName[node]
	if n == nil {
		return
	}
	if nc := e.claimOfNode(n); nc != nil {
		nc.Status.LastPodEventTime = metav1.NewTime(e.now)
	}
	e.disruptChanged = true
}

// endJobs ends pods whose run is over.
func (e *Engine) endJobs() {
	if e.nextJobEnd.IsZero() || e.now.Before(e.nextJobEnd) {
		return
	}
	e.nextJobEnd = time.Time{}
	for _, p := range e.pods {
		st := e.podState[p.UID]
		if st == nil || st.endsAt.IsZero() || p.DeletionTimestamp != nil {
			continue
		}
		if e.now.Before(st.endsAt) {
			if e.nextJobEnd.IsZero() || st.endsAt.Before(e.nextJobEnd) {
				e.nextJobEnd = st.endsAt
			}
			continue
		}
		e.rec.jobsDone++
		e.remove(p)
	}
}

// pendingAppeared opens or extends the provisioner's batch window.
func (e *Engine) pendingAppeared() {
	if !e.batchOpen {
		e.batchOpen = true
		e.batchStart = e.now
	}
	e.lastTrigger = e.now
	e.provisionChanged = true
}

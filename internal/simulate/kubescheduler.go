package simulate

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodewright/nodewright/internal/kubescheduler"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// notReadyTaint stands for the node lifecycle controller's taint on a
// node kube-scheduler must not use yet: here, a node whose claim is not
// initialized (startup or agent taints, or a NotReady window, remain).
var notReadyTaint = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}

// scheduleLoop is kube-scheduler. When something changed that could let a
// pending pod be placed (a pod arrived or left, a node initialized, a
// taint changed), it takes the pending pods in its queue order and binds
// each where the default profile would, over every node. A pod that fits
// nowhere stays pending and marked unschedulable, with the scheduler's
// message, and so is the provisioner's to plan. Pods the provisioner
// nominated to a NodeClaim are not held for it: like kube-scheduler, the
// loop binds them wherever scores best once their node is ready.
func (e *Engine) scheduleLoop() {
	if !e.scheduleChanged {
		return
	}
	e.scheduleChanged = false
	var pending []*corev1.Pod
	for _, p := range e.pods {
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodPending && !snapshot.IsDaemonSetPod(p) {
			pending = append(pending, p)
		}
	}
	if len(pending) == 0 {
		return
	}
	sort.SliceStable(pending, func(i, j int) bool { return kubescheduler.Less(pending[i], pending[j]) })
	if e.schedCache == nil {
		e.schedCache = kubescheduler.NewCache()
	}
	s := kubescheduler.NewSnapshot(e.schedulerNodes(), e.pods, kubescheduler.Options{
		DefaultSpreadSelector: e.defaultSpreadSelector(), Namespaces: e.namespaces, Cache: e.schedCache,
		PVCs: e.pvcs, PVs: e.pvs, StorageClasses: e.scs})
	bound, waitsForPods := false, false
	for _, p := range pending {
		d := s.Schedule(p)
		if d.Node == "" {
			setUnschedulableMessage(p, d.Message())
			waitsForPods = waitsForPods || hasPodAffinity(p)
			continue
		}
		s.Assume(p, d.Node)
		e.bind(p, d.Node)
		bound = true
	}
	// kube-scheduler retries a pod waiting for pod affinity when a pod is
	// added; one bound in this pass may be what it waits for.
	if bound && waitsForPods {
		e.scheduleChanged = true
	}
}

// schedulerNodes are the nodes as kube-scheduler sees them: every node,
// those of claims not yet initialized with the not-ready taint.
func (e *Engine) schedulerNodes() []*corev1.Node {
	starting := map[string]bool{}
	for _, nc := range e.starting {
		if nc.Status.NodeName != "" {
			starting[nc.Status.NodeName] = true
		}
	}
	out := make([]*corev1.Node, 0, len(e.nodes))
	for _, n := range e.nodes {
		if starting[n.Name] {
			cp := *n
			cp.Spec.Taints = append(append([]corev1.Taint(nil), n.Spec.Taints...), notReadyTaint)
			n = &cp
		}
		out = append(out, n)
	}
	return out
}

// defaultSpreadSelector gives kube-scheduler's default topology spread
// constraints the selector of a pod's ReplicaSet, StatefulSet or
// ReplicationController, when the simulation knows the workload. The
// simulator has no Services, which kube-scheduler would also consult.
func (e *Engine) defaultSpreadSelector() func(*corev1.Pod) labels.Selector {
	selectors := map[string]labels.Selector{}
	for _, w := range e.workloads {
		if w.Selector == nil {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(w.Selector); err == nil {
			selectors[workloadKey(w)] = sel
		}
	}
	return func(p *corev1.Pod) labels.Selector {
		ref := metav1.GetControllerOf(p)
		if ref == nil || (ref.Kind != "ReplicaSet" && ref.Kind != "StatefulSet" && ref.Kind != "ReplicationController") {
			return nil
		}
		if st := e.podState[p.UID]; st != nil {
			return selectors[st.owner]
		}
		return nil
	}
}

func hasPodAffinity(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	return a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

// setUnschedulableMessage says in the pod's PodScheduled condition why
// kube-scheduler found no node.
func setUnschedulableMessage(p *corev1.Pod, msg string) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			p.Status.Conditions[i].Message = msg
		}
	}
}

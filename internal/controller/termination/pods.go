package termination

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/protect"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// Group is a wave of the drain. A wave is evicted only once every pod of the
// waves before it is gone, as kubelet's graceful node shutdown orders them:
// workloads first, their DaemonSets' pods (log shippers, node agents) after,
// critical pods last.
type Group int

// The waves, in order.
const (
	GroupWorkload Group = iota
	GroupDaemonSet
	GroupCriticalWorkload
	GroupCriticalDaemonSet
)

var groupNames = [...]string{"workload", "DaemonSet", "critical workload", "critical DaemonSet"}

func (g Group) String() string { return groupNames[g] }

// GroupOf is the wave a pod leaves the node in. Critical means the
// priorityClassName system-cluster-critical or system-node-critical, as
// Karpenter reads it.
func GroupOf(p *corev1.Pod) Group {
	critical := p.Spec.PriorityClassName == "system-cluster-critical" || p.Spec.PriorityClassName == "system-node-critical"
	daemon := snapshot.IsDaemonSetPod(p)
	switch {
	case critical && daemon:
		return GroupCriticalDaemonSet
	case critical:
		return GroupCriticalWorkload
	case daemon:
		return GroupDaemonSet
	}
	return GroupWorkload
}

// Why a pod does not block the drain.
const (
	SkipTerminal         = "finished"
	SkipMirror           = "mirror pod"
	SkipTolerates        = "tolerates " + karpv1.DisruptedTaintKey + ":NoSchedule"
	SkipStuckTerminating = "terminating past its grace period"
)

// Skip is why the drain neither evicts nor waits for a pod, or "" when it
// must leave the node. Karpenter's rules: finished pods are done; mirror
// pods cannot be evicted (kubelet owns them); a pod that tolerates the
// disrupted taint would be scheduled right back; and a pod still there
// stuckAfter past its deletion timestamp has a kubelet that is not
// finishing it, so waiting longer only delays the node.
func Skip(p *corev1.Pod, now time.Time, stuckAfter time.Duration) string {
	switch {
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return SkipTerminal
	case protect.Mirror(p):
		return SkipMirror
	case protect.ToleratesDisruptedTaint(p):
		return SkipTolerates
	case p.DeletionTimestamp != nil && now.Sub(p.DeletionTimestamp.Time) > stuckAfter:
		return SkipStuckTerminating
	}
	return ""
}

// gracePeriod is the pod's own terminationGracePeriodSeconds; the API
// server defaults it to 30.
func gracePeriod(p *corev1.Pod) time.Duration {
	s := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if p.Spec.TerminationGracePeriodSeconds != nil {
		s = *p.Spec.TerminationGracePeriodSeconds
	}
	return time.Duration(s) * time.Second
}

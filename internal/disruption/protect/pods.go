package protect

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// Active reports whether a pod still runs: not finished and not being
// deleted.
func Active(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// Mirror reports whether a pod is the API server's copy of a kubelet's
// static pod, which no eviction can remove.
func Mirror(p *corev1.Pod) bool {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	for _, ref := range p.OwnerReferences {
		if ref.Kind == "Node" && ref.APIVersion == "v1" {
			return true
		}
	}
	return false
}

// ToleratesDisruptedTaint reports whether a pod tolerates
// karpenter.sh/disrupted:NoSchedule. A drain leaves such a pod alone: it
// could land straight back on the node.
func ToleratesDisruptedTaint(p *corev1.Pod) bool {
	return corev1helpers.TolerationsTolerateTaint(p.Spec.Tolerations, &karpv1.DisruptedNoScheduleTaint)
}

// Evictable reports whether draining the pod's node would evict the pod:
// it is active, not a mirror pod, does not tolerate the disrupted taint, and
// do-not-disrupt does not hold it at now.
func Evictable(p *corev1.Pod, now time.Time) bool {
	if !Active(p) || Mirror(p) || ToleratesDisruptedTaint(p) {
		return false
	}
	held, _, _ := DoNotDisrupt(p, now)
	return !held
}

// DoNotDisrupt reads a pod's karpenter.sh/do-not-disrupt annotation at now.
// "true" holds the pod's node indefinitely (until is zero). A positive Go
// duration such as "30m" holds it until the pod's start time (its creation
// time before it has one) plus the duration; with neither time known it
// holds indefinitely. Any other value does not hold, and err says so, naming
// the pod. It does not look at whether the pod is active.
func DoNotDisrupt(p *corev1.Pod, now time.Time) (held bool, until time.Time, err error) {
	v, ok := p.Annotations[karpv1.DoNotDisruptAnnotationKey]
	if !ok {
		return false, time.Time{}, nil
	}
	if v == "true" {
		return true, time.Time{}, nil
	}
	d, perr := time.ParseDuration(v)
	if perr == nil && d <= 0 {
		perr = errors.New("the duration is not positive")
	}
	if perr != nil {
		return false, time.Time{}, fmt.Errorf(`pod %s: %s %q is neither "true" nor a positive duration such as "30m", so it is ignored: %w`,
			podName(p), karpv1.DoNotDisruptAnnotationKey, v, perr)
	}
	start := p.CreationTimestamp.Time
	if p.Status.StartTime != nil {
		start = p.Status.StartTime.Time
	}
	if start.IsZero() {
		return true, time.Time{}, nil
	}
	until = start.Add(d)
	return now.Before(until), until, nil
}

// ready reports whether a pod's Ready condition is true, which is what the
// Eviction API calls healthy.
func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

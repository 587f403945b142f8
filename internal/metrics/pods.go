package metrics

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

var (
	// PodStartupDuration is the time from a pod's creation to its being
	// Ready, for pods the controller saw pending.
	PodStartupDuration = newSummaryVec(Spec{Name: "karpenter_pods_startup_duration_seconds",
		Help: "The time from pod creation until the pod is running, for pods seen pending."}).WithLabelValues()
	// PodBoundDuration is the time from a pod's creation to its binding, for
	// pods the controller saw unbound.
	PodBoundDuration = newHistogramVec(Spec{Name: "karpenter_pods_bound_duration_seconds",
		Help: "The time from pod creation until the pod is bound, for pods seen unbound."}, durationBuckets()).WithLabelValues()
)

// podTracker remembers which pods were seen unbound and not yet started,
// so that a pod's binding and start are timed once, and only for pods that
// waited while the controller watched (a running pod whose readiness flaps
// is not a pod starting).
type podTracker struct {
	mu        sync.Mutex
	unbound   map[types.UID]bool
	unstarted map[types.UID]bool
}

func newPodTracker() *podTracker {
	return &podTracker{unbound: map[types.UID]bool{}, unstarted: map[types.UID]bool{}}
}

// podTimes are the durations one pod event completes.
type podTimes struct {
	Bound, Started time.Duration
	// HasBound and HasStarted say which of the two the event completed.
	HasBound, HasStarted bool
}

// seen notes p's state at an add or update and returns what it completed.
func (t *podTracker) seen(p *corev1.Pod) podTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out podTimes
	if terminal(p) {
		delete(t.unbound, p.UID)
		delete(t.unstarted, p.UID)
		return out
	}
	created := p.CreationTimestamp.Time
	switch {
	case !bound(p):
		t.unbound[p.UID] = true
	case t.unbound[p.UID]:
		delete(t.unbound, p.UID)
		out.HasBound = true
		out.Bound = since(created, condition(p, corev1.PodScheduled))
	}
	ready := condition(p, corev1.PodReady)
	switch {
	case p.Status.Phase == corev1.PodPending:
		t.unstarted[p.UID] = true
	case t.unstarted[p.UID] && ready != nil && ready.Status == corev1.ConditionTrue:
		delete(t.unstarted, p.UID)
		out.HasStarted = true
		out.Started = since(created, ready)
	}
	return out
}

// gone forgets a deleted pod.
func (t *podTracker) gone(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.unbound, uid)
	delete(t.unstarted, uid)
}

// since is the time from created to c's last transition, or to now when
// the condition has no time.
func since(created time.Time, c *corev1.PodCondition) time.Duration {
	if c == nil || c.LastTransitionTime.IsZero() {
		return time.Since(created)
	}
	return c.LastTransitionTime.Sub(created)
}

// record observes what an event completed.
func (pt podTimes) record() {
	if pt.HasBound {
		PodBoundDuration.Observe(pt.Bound.Seconds())
	}
	if pt.HasStarted {
		PodStartupDuration.Observe(pt.Started.Seconds())
	}
}

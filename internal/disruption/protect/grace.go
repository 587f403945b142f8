package protect

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// defaultPodGrace is what the API server fills in for a pod without
// terminationGracePeriodSeconds.
const defaultPodGrace = 30 * time.Second

// Deletion is when a pod on a draining node must go for the node to be gone
// by its deadline.
type Deletion struct {
	// Deadline is when the node must be gone: the drain's start plus the
	// NodeClaim's terminationGracePeriod. Zero without one: the drain waits
	// for evictions however long they take.
	Deadline time.Time
	// DeleteAt is when the pod must be deleted, evictable or not, so that
	// its own grace period ends by Deadline: Deadline less the pod's
	// terminationGracePeriodSeconds, not before the drain's start. Zero
	// without a Deadline.
	DeleteAt time.Time
	// Due says DeleteAt has come.
	Due bool
	// Grace is the grace period to delete the pod with at now: its own,
	// cut to what is left before Deadline, and never below 0.
	Grace time.Duration
	// DeadlinePassed says the node's time is up: whatever still runs on it
	// is ended with the node.
	DeadlinePassed bool
}

// PodDeletion works out, for a pod on a node whose drain started at start
// under the NodeClaim's terminationGracePeriod (nil for none), when the pod
// must be deleted and with what grace period, at now. podGraceSeconds is
// the pod's spec.terminationGracePeriodSeconds (nil means the API server's
// default of 30s).
func PodDeletion(start time.Time, terminationGracePeriod *metav1.Duration, podGraceSeconds *int64, now time.Time) Deletion {
	grace := defaultPodGrace
	if podGraceSeconds != nil {
		grace = time.Duration(max(*podGraceSeconds, 0)) * time.Second
	}
	if terminationGracePeriod == nil {
		return Deletion{Grace: grace}
	}
	d := Deletion{Deadline: start.Add(terminationGracePeriod.Duration)}
	d.DeleteAt = d.Deadline.Add(-grace)
	if d.DeleteAt.Before(start) {
		d.DeleteAt = start
	}
	d.Due = !now.Before(d.DeleteAt)
	d.DeadlinePassed = !now.Before(d.Deadline)
	d.Grace = max(min(grace, d.Deadline.Sub(now)), 0)
	return d
}

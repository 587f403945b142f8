package disruption

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/drift"
	"github.com/nodewright/nodewright/internal/disruption/protect"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// podSets fingerprints, per node, the pods whose coming and going is a pod
// event: bound, neither a DaemonSet's nor a mirror pod, and neither terminal
// nor terminating. As in Karpenter (its podevents controller), a pod is an
// event when it binds and when it starts terminating or ends, and not again
// when a terminating pod is finally gone.
func podSets(pods []*corev1.Pod) map[string]string {
	onNode := map[string][]string{}
	for _, p := range pods {
		if inPodSet(p) {
			onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], string(p.UID))
		}
	}
	out := make(map[string]string, len(onNode))
	for node, uids := range onNode {
		sort.Strings(uids)
		out[node] = strings.Join(uids, ",")
	}
	return out
}

// inPodSet says whether p's coming and going is a pod event (see podSets).
func inPodSet(p *corev1.Pod) bool {
	return snapshot.Bound(p) && p.DeletionTimestamp == nil && !snapshot.IsDaemonSetPod(p) && !protect.Mirror(p)
}

// trackPodEvents notes, per claim, when the set of pods on its node
// (podSets) changed since the last loop, and writes that time to
// status.lastPodEventTime where it can change a decision (podEventStamps).
// consolidateAfter counts from it, and the NodeClaim lifecycle
// controller's Consolidatable condition with it. A restarted controller
// starts from what it sees, keeping the recorded time.
func (c *Controller) trackPodEvents(ctx context.Context, cluster *snapshot.Cluster, idx index, now time.Time) {
	sets := podSets(cluster.Pods)
	c.mu.Lock()
	if c.podSets == nil {
		c.podSets, c.podEvents = map[string]string{}, map[string]time.Time{}
	}
	seen := map[string]bool{}
	for _, nc := range cluster.NodeClaims {
		if nc.Status.NodeName == "" || nc.DeletionTimestamp != nil {
			continue
		}
		sig := sets[nc.Status.NodeName]
		seen[nc.Name] = true
		prev, known := c.podSets[nc.Name]
		c.podSets[nc.Name] = sig
		// A change the pod watch saw since the last loop keeps the
		// watch's time, which is the event's own.
		if at, ok := c.podEvents[nc.Name]; known && prev != sig && (!ok || !at.After(c.lastLoop)) {
			c.podEvents[nc.Name] = now
		}
	}
	for name := range c.podSets {
		if !seen[name] {
			delete(c.podSets, name)
			delete(c.podEvents, name)
		}
	}
	c.lastLoop = now
	c.stamps = loopStamps(cluster.NodeClaims, idx.pools, c.stamps.stamped)
	due := podEventStamps(cluster.NodeClaims, idx.pools, c.podEvents)
	for name, at := range due {
		// Written by the pod watch since the cache was read.
		if !at.After(c.stamps.stamped[name]) {
			delete(due, name)
		}
	}
	c.mu.Unlock()
	for _, nc := range cluster.NodeClaims {
		at, ok := due[nc.Name]
		if !ok {
			continue
		}
		before := nc.DeepCopy()
		after := nc.DeepCopy()
		after.Status.LastPodEventTime = metav1.NewTime(at)
		if err := c.Client.Status().Patch(ctx, after, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
			// The next loop tries again; consolidation only waits longer.
			continue
		}
		c.mu.Lock()
		if at.After(c.stamps.stamped[nc.Name]) {
			c.stamps.stamped[nc.Name] = at
		}
		c.mu.Unlock()
	}
}

// loopStamps is what the pod watch needs of this loop's claims: node to
// claim, the claims whose NodePool waits, and each claim's stamp, the later
// of the one read and the one last written (the cache may lag a write).
func loopStamps(claims []*karpv1.NodeClaim, pools map[string]*karpv1.NodePool, written map[string]time.Time) stampState {
	st := stampState{claimOf: map[string]string{}, waits: map[string]bool{}, stamped: map[string]time.Time{}}
	for _, nc := range claims {
		if nc.DeletionTimestamp != nil {
			continue
		}
		if nc.Status.NodeName != "" {
			st.claimOf[nc.Status.NodeName] = nc.Name
		}
		if np := pools[nc.Labels[karpv1.NodePoolLabelKey]]; np != nil {
			if after := np.Spec.Disruption.ConsolidateAfter.Duration; after != nil && *after > 0 {
				st.waits[nc.Name] = true
			}
		}
		st.stamped[nc.Name] = nc.Status.LastPodEventTime.Time
		if w := written[nc.Name]; w.After(st.stamped[nc.Name]) {
			st.stamped[nc.Name] = w
		}
	}
	return st
}

// podEventStamps decides which claims get status.lastPodEventTime written,
// and the time: the last pod event this process saw (events, by claim
// name), when it is later than the time the claim holds, and only in a
// NodePool whose consolidateAfter is a positive duration. With 0 or Never
// the time decides nothing: consolidation takes an initialized node at
// once, or never. Writing it there anyway cost a NodeClaim status write per
// claim per loop while its node filled, on every claim of a burst (with
// the preview, the disruption loop made 571 of the 1,771 NodeClaim status
// writes of a 10,000-pod run). The events stay
// in memory, so a NodePool changed to a positive consolidateAfter gets its
// claims' times written in the next loop.
func podEventStamps(claims []*karpv1.NodeClaim, pools map[string]*karpv1.NodePool, events map[string]time.Time) map[string]time.Time {
	due := map[string]time.Time{}
	for _, nc := range claims {
		at, ok := events[nc.Name]
		if !ok || nc.DeletionTimestamp != nil {
			continue
		}
		np := pools[nc.Labels[karpv1.NodePoolLabelKey]]
		if np == nil {
			continue
		}
		if after := np.Spec.Disruption.ConsolidateAfter.Duration; after == nil || *after <= 0 {
			continue
		}
		// The API keeps whole seconds: a time written once compares equal
		// after that, and is not written again.
		if at = at.Truncate(time.Second); at.After(nc.Status.LastPodEventTime.Time) {
			due[nc.Name] = at
		}
	}
	return due
}

// restamp gives claims made by another hash version (or none) the current
// NodePool hash, so that a new algorithm does not mark them all drifted.
func (c *Controller) restamp(ctx context.Context, cluster *snapshot.Cluster, idx index) error {
	var errs []error
	for _, nc := range cluster.NodeClaims {
		np := idx.pools[nc.Labels[karpv1.NodePoolLabelKey]]
		if np == nil || nc.DeletionTimestamp != nil || !drift.NeedsRestamp(nc) {
			continue
		}
		before := nc.DeepCopy()
		after := nc.DeepCopy()
		drift.Stamp(after, np)
		if err := c.Client.Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil &&
			!apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("stamping NodeClaim %s with its NodePool's hash: %w", nc.Name, err))
		}
	}
	return errors.Join(errs...)
}

// conditionChanged reports whether setting cond would change conds.
func conditionChanged(conds []metav1.Condition, cond metav1.Condition) bool {
	cur := meta.FindStatusCondition(conds, cond.Type)
	return cur == nil || cur.Status != cond.Status || cur.Reason != cond.Reason || cur.Message != cond.Message ||
		cur.ObservedGeneration != cond.ObservedGeneration
}

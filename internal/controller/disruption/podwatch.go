package disruption

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// The loop finds a pod event by comparing each node's pods with what it saw
// a loop before, so alone it stamps lastPodEventTime up to a loop late. That
// is harmless while a node fills (the stamp is recent either way), but not
// when a node goes idle after a quiet spell: until the next loop the claim
// still holds the time of the last pod that came, consolidateAfter looks
// long run out, and `nodewright explain node` said "disrupting (Empty)" a
// minute and more before the controller counted the node idle at all.
// Watching pods gives the time of the event itself, and a stamp older than
// a loop is written within a second (see promptStamps).

// podFlushInterval is how often pod events seen by the watch are written.
const podFlushInterval = time.Second

// counts says whether p is in its node's pod set (see podSets).
func counts(p *corev1.Pod) bool {
	return p != nil && inPodSet(p)
}

func asPod(obj any) *corev1.Pod {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	p, _ := obj.(*corev1.Pod)
	return p
}

// podEventNodes are the nodes whose pod set a watch event from old to new
// (either nil) changes.
func podEventNodes(old, new *corev1.Pod) []string {
	oc, nc := counts(old), counts(new)
	switch {
	case oc && nc && old.Spec.NodeName != new.Spec.NodeName:
		return []string{old.Spec.NodeName, new.Spec.NodeName}
	case oc && !nc:
		return []string{old.Spec.NodeName}
	case !oc && nc:
		return []string{new.Spec.NodeName}
	}
	return nil
}

// PodInformer is the part of a pod informer WatchPods uses; both client-go's
// shared informers and controller-runtime's cache informers have it.
type PodInformer interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
}

// WatchPods notes pod events as the informer delivers them. The pods of its
// first list are not events: the loop learns them as they stand.
func (c *Controller) WatchPods(inf PodInformer) error {
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				c.notePodEvent(podEventNodes(nil, asPod(obj)), time.Now())
			}
		},
		UpdateFunc: func(old, new any) { c.notePodEvent(podEventNodes(asPod(old), asPod(new)), time.Now()) },
		DeleteFunc: func(obj any) { c.notePodEvent(podEventNodes(asPod(obj), nil), time.Now()) },
	})
	if err != nil {
		return fmt.Errorf("watching pods for pod events: %w", err)
	}
	c.mu.Lock()
	c.watching = true
	c.mu.Unlock()
	return nil
}

func (c *Controller) notePodEvent(nodes []string, at time.Time) {
	if len(nodes) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pendingPods == nil {
		c.pendingPods = map[string]time.Time{}
	}
	for _, n := range nodes {
		if at.After(c.pendingPods[n]) {
			c.pendingPods[n] = at
		}
	}
}

// stampState is what the loop last learnt of the claims, for the watch's
// writes between loops.
type stampState struct {
	// claimOf maps a node to its claim.
	claimOf map[string]string
	// waits holds the claims whose NodePool's consolidateAfter is a
	// positive duration: the only ones stamped (see podEventStamps).
	waits map[string]bool
	// stamped is each claim's lastPodEventTime as last read or written.
	stamped map[string]time.Time
}

// promptStamps moves pending pod events (by node) onto claims' events and
// picks the stamps to write now: on claims whose NodePool waits, when the
// event is at least interval after the claim's stamp. Closer ones wait for
// the loop, which writes a claim at most once a loop: a node filling with
// pods is not written once a second. Pending events on nodes of no known
// claim are dropped; the loop finds those by their pods.
func promptStamps(pending map[string]time.Time, st stampState, events map[string]time.Time, interval time.Duration) map[string]time.Time {
	due := map[string]time.Time{}
	for node, at := range pending {
		claim, ok := st.claimOf[node]
		if !ok {
			continue
		}
		if at.After(events[claim]) {
			events[claim] = at
		}
		if !st.waits[claim] {
			continue
		}
		at = at.Truncate(time.Second)
		if at.Sub(st.stamped[claim]) >= interval && at.After(due[claim]) {
			due[claim] = at
		}
	}
	return due
}

// flushPodEvents writes the stamps promptStamps picks.
func (c *Controller) flushPodEvents(ctx context.Context) {
	c.mu.Lock()
	if len(c.pendingPods) == 0 || c.stamps.claimOf == nil {
		c.mu.Unlock()
		return
	}
	due := promptStamps(c.pendingPods, c.stamps, c.podEvents, c.Opts.Interval)
	c.pendingPods = map[string]time.Time{}
	c.mu.Unlock()
	for claim, at := range due {
		if err := c.writeStamp(ctx, claim, at); err != nil {
			// The loop writes it (the event is in c.podEvents).
			log.FromContext(ctx).V(1).Info("cannot write lastPodEventTime", "nodeclaim", claim, "error", err.Error())
			continue
		}
	}
}

// writeStamp sets claim's status.lastPodEventTime to at, and remembers it.
func (c *Controller) writeStamp(ctx context.Context, claim string, at time.Time) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"lastPodEventTime": metav1.NewTime(at)}})
	if err != nil {
		return err
	}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim}}
	if err := c.Client.Status().Patch(ctx, nc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	c.mu.Lock()
	if c.stamps.stamped != nil && at.After(c.stamps.stamped[claim]) {
		c.stamps.stamped[claim] = at
	}
	c.mu.Unlock()
	return nil
}

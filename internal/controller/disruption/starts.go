package disruption

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/budget"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// startsKept is how long starts are remembered for a NodePool without a
// valid rate, should one be set later.
const startsKept = 24 * time.Hour

// recentStarts are the disruption starts per NodePool, for rate budgets:
// those this process saw and those the NodePools record
// (budget.StartsAnnotation), so that a restarted controller or a new
// leader keeps counting the starts of nodes long gone.
func (c *Controller) recentStarts(cluster *snapshot.Cluster, now time.Time) map[string][]time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started == nil {
		c.started = map[string][]time.Time{}
	}
	for _, np := range cluster.NodePools {
		if v := np.Annotations[budget.StartsAnnotation]; v != "" {
			c.started[np.Name] = append(c.started[np.Name], budget.DecodeStarts(v)...)
		}
	}
	out := map[string][]time.Time{}
	for pool, ts := range c.started {
		var keep []time.Time
		for _, t := range budget.SortedStarts(ts) {
			if now.Sub(t) < startsKept {
				keep = append(keep, t)
			}
		}
		c.started[pool] = keep
		out[pool] = append([]time.Time(nil), keep...)
	}
	return out
}

func (c *Controller) noteStart(pool string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started == nil {
		c.started = map[string][]time.Time{}
	}
	c.started[pool] = append(c.started[pool], now)
}

// persistStarts records on each NodePool with a disruption rate the starts
// within its window, and drops the record from those without one. A write
// that fails is tried again next loop; memory holds the starts meanwhile.
func (c *Controller) persistStarts(ctx context.Context, cluster *snapshot.Cluster, now time.Time) {
	c.mu.Lock()
	want := map[string]string{}
	for _, np := range cluster.NodePools {
		window, ok := budget.RateWindow(np.Annotations)
		if !ok {
			continue
		}
		var within []time.Time
		for _, t := range c.started[np.Name] {
			if now.Sub(t) < window {
				within = append(within, t)
			}
		}
		want[np.Name] = budget.EncodeStarts(within)
	}
	c.mu.Unlock()
	for _, np := range cluster.NodePools {
		have, has := np.Annotations[budget.StartsAnnotation]
		w, rated := want[np.Name]
		if has == (rated && w != "") && have == w {
			continue
		}
		if err := c.writeStarts(ctx, np, w); err != nil {
			log.FromContext(ctx).Error(err, "recording disruption starts on the NodePool; trying again next loop", "nodepool", np.Name)
		}
	}
}

// writeStarts sets (or, when empty, removes) the starts annotation.
func (c *Controller) writeStarts(ctx context.Context, np *karpv1.NodePool, v string) error {
	before := np.DeepCopy()
	after := np.DeepCopy()
	if v == "" {
		delete(after.Annotations, budget.StartsAnnotation)
	} else {
		if after.Annotations == nil {
			after.Annotations = map[string]string{}
		}
		after.Annotations[budget.StartsAnnotation] = v
	}
	return client.IgnoreNotFound(c.Client.Patch(ctx, after, client.MergeFrom(before)))
}

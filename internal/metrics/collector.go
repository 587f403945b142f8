package metrics

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/observe"
)

// scrapeTimeout bounds the cache reads of one scrape.
const scrapeTimeout = 10 * time.Second

// Collector publishes the metrics derived from cluster state (nodes,
// NodePools, pending pods, cache sync) by reading the manager's cache at
// each scrape, so a deleted node or NodePool takes its series with it; and
// it times pods' binding and start from the pod informer's events.
//
// It is a manager Runnable that needs leader election, as Karpenter's
// metrics controllers do: only the leader publishes, so a query summing
// over replicas does not count a node twice.
type Collector struct {
	// Stores, when set, are the cache's informer stores a scrape reads
	// (see observe.Stores): without them each scrape listed every pod by
	// value, a copy of each pod's struct that is garbage a moment later.
	// Nil lists through the cache.
	Stores *observe.Stores

	cache ctrlcache.Cache
	now   func() time.Time
	descs map[string]*prometheus.Desc
	pods  *podTracker

	mu            sync.Mutex
	unsyncedSince time.Time
}

// NewCollector reads from c, the manager's cache.
func NewCollector(c ctrlcache.Cache) *Collector {
	descs := map[string]*prometheus.Desc{}
	for _, s := range stateSpecs {
		descs[s.Name] = prometheus.NewDesc(s.Name, s.Help, s.Labels, nil)
	}
	return &Collector{cache: c, now: time.Now, descs: descs, pods: newPodTracker()}
}

// Start registers the collector and the pod event handler until ctx ends.
func (c *Collector) Start(ctx context.Context) error {
	inf, err := c.cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("watching pods for the pod metrics: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.podSeen(o) },
		UpdateFunc: func(_, o any) { c.podSeen(o) },
		DeleteFunc: func(o any) {
			if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = tomb.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				c.pods.gone(p.UID)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watching pods for the pod metrics: %w", err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	if err := crmetrics.Registry.Register(c); err != nil {
		return fmt.Errorf("registering the cluster state metrics: %w", err)
	}
	defer crmetrics.Registry.Unregister(c)
	<-ctx.Done()
	return nil
}

func (c *Collector) podSeen(o any) {
	if p, ok := o.(*corev1.Pod); ok {
		c.pods.seen(p).record()
	}
}

// Describe sends the descriptions of the state metrics.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads the cache and sends the state metrics. A cache not yet
// synced publishes only that it is not, rather than blocking the scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	snap, err := c.snapshot(ctx)
	if err != nil {
		log.FromContext(ctx).WithName("metrics").Error(err, "reading cluster state for metrics")
		return
	}
	for _, s := range Samples(snap) {
		m, err := prometheus.NewConstMetric(c.descs[s.Name], prometheus.GaugeValue, s.Value, s.Labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(c.descs[s.Name], err)
		}
		ch <- m
	}
}

func (c *Collector) snapshot(ctx context.Context) (Snapshot, error) {
	snap := Snapshot{Now: c.now()}
	synced, err := c.synced(ctx)
	if err != nil {
		return snap, err
	}
	c.mu.Lock()
	switch {
	case synced:
		c.unsyncedSince = time.Time{}
	case c.unsyncedSince.IsZero():
		c.unsyncedSince = snap.Now
	}
	snap.Synced, snap.UnsyncedFor = synced, snap.Now.Sub(c.unsyncedSince)
	c.mu.Unlock()
	if !synced {
		return snap, nil
	}
	seen, err := c.Stores.Look(ctx, c.cache)
	if err != nil {
		return snap, err
	}
	snap.Nodes, snap.Pods, snap.NodeClaims, snap.NodePools = seen.Cluster.Nodes, seen.Cluster.Pods, seen.Cluster.NodeClaims, seen.Cluster.NodePools
	return snap, nil
}

// synced reports whether the informers the state metrics read have synced.
func (c *Collector) synced(ctx context.Context) (bool, error) {
	for _, o := range []client.Object{&corev1.Node{}, &corev1.Pod{}, &karpv1.NodeClaim{}, &karpv1.NodePool{}} {
		inf, err := c.cache.GetInformer(ctx, o, ctrlcache.BlockUntilSynced(false))
		if err != nil {
			return false, fmt.Errorf("getting the %T informer: %w", o, err)
		}
		if !inf.HasSynced() {
			return false, nil
		}
	}
	return true, nil
}

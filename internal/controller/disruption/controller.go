package disruption

import (
	"context"
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	"github.com/nodewright/nodewright/internal/disruption/drift"
	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/learned"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/observe"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// Options tune disruption.
type Options struct {
	// Interval between disruption loops.
	Interval time.Duration
	// SpotToSpot lets consolidation replace spot nodes by cheaper spot nodes.
	SpotToSpot bool
	// SpotToSpotMinTypes is the spot replacement flexibility guard; zero
	// is Karpenter's 15.
	SpotToSpotMinTypes int
	// Policies are --min-values-policy and --preference-policy.
	Policies solver.Policies
	// ReplacementTimeout gives up a replacement that has not initialized by
	// then; the nodes it was for are kept.
	ReplacementTimeout time.Duration
	// NominationGrace is the provisioner's.
	NominationGrace time.Duration
	// ValidationDelay holds emptiness and consolidation back until the
	// loops of this long decide them again (planner.Validate); 0 acts at
	// once.
	ValidationDelay time.Duration
}

// DefaultOptions loop every 10 seconds and validate consolidation for 15,
// as Karpenter does.
func DefaultOptions() Options {
	return Options{Interval: 10 * time.Second, ReplacementTimeout: 10 * time.Minute, NominationGrace: time.Minute, ValidationDelay: 15 * time.Second}
}

// Controller is the disruption loop. It runs on the leader only.
type Controller struct {
	Client   client.Client
	Cloud    cloudprovider.CloudProvider
	Learned  *learned.Store
	Recorder record.EventRecorder
	Opts     Options
	// Stores, when set, are the cache's informer stores each loop reads the
	// cluster from (see observe.Stores); nil lists through Client.
	Stores *observe.Stores

	mu sync.Mutex
	// podSets remembers each node's pods as last seen, to tell when a pod
	// came or went; podEvents when that last happened, by claim
	// (status.lastPodEventTime, see podEventStamps).
	podSets   map[string]string
	podEvents map[string]time.Time
	// lastLoop is when the last loop looked at the pods.
	lastLoop time.Time
	// watching says WatchPods is on: pendingPods holds pod events by node
	// since the last flush, stamps what the last loop learnt of claims.
	watching    bool
	pendingPods map[string]time.Time
	stamps      stampState
	// started remembers recent disruption starts per NodePool, for rate
	// budgets (claims that are gone no longer tell).
	started map[string][]time.Time
	// cursor is where single-node consolidation goes on next loop.
	cursor int
	// proposals are the claims consolidation chose last loop, and since
	// when, for planner.Validate.
	proposals planner.Proposals
	// previews holds when this process last wrote each claim's preview
	// condition (see previewDue).
	previews map[string]time.Time
	// requests keeps each pod's summed requests from loop to loop, for the
	// planner's simulations and its free-room count.
	requests solver.Requests
}

// Start loops until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("disruption")
	ctx = log.IntoContext(ctx, logger)
	t := time.NewTicker(c.Opts.Interval)
	defer t.Stop()
	c.mu.Lock()
	watching := c.watching
	c.mu.Unlock()
	var flush <-chan time.Time
	if watching {
		f := time.NewTicker(podFlushInterval)
		defer f.Stop()
		flush = f.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-flush:
			c.flushPodEvents(ctx)
		case <-t.C:
			if _, err := c.Reconcile(ctx, time.Now()); err != nil {
				logger.Error(err, "disruption loop failed")
			}
		}
	}
}

// Reconcile runs one loop: observe, decide, act. It returns the plan it
// acted on.
func (c *Controller) Reconcile(ctx context.Context, now time.Time) (*planner.Plan, error) {
	seen, err := c.Stores.Look(ctx, c.Client)
	if err != nil {
		return nil, err
	}
	cluster, pdbs, overlays := &seen.Cluster, seen.PDBs, seen.Overlays
	idx := indexOf(cluster)
	c.trackPodEvents(ctx, cluster, idx, now)
	// A NodeClaim whose writes fail (a webhook refusing it, say) must not
	// hold up the others: both go through every claim, and the loop plans
	// on; the failures are logged and tried again next loop.
	if err := c.restamp(ctx, cluster, idx); err != nil {
		log.FromContext(ctx).Error(err, "stamping NodeClaims with their NodePool's hash")
	}
	if err := c.progress(ctx, cluster, idx, now); err != nil {
		log.FromContext(ctx).Error(err, "finishing recorded disruptions")
	}
	poolTypes, _, _ := provisioning.ResolveTypes(ctx, c.Cloud, c.Learned, cluster.NodePools, overlays)
	cloudDrift := c.cloudDrift(ctx, cluster)
	start := time.Now()
	defer c.requests.Prune()
	plan := planner.Decide(planner.Input{Cluster: cluster, PDBs: pdbs, PoolTypes: poolTypes, CloudDrift: cloudDrift, Requests: &c.requests,
		Started: c.recentStarts(cluster, now), Now: now, SingleNodeCursor: c.cursor, RepairPolicies: cloudprovider.RepairPoliciesOf(c.Cloud),
		Options: planner.Options{SpotToSpot: c.Opts.SpotToSpot, SpotToSpotMinTypes: c.Opts.SpotToSpotMinTypes, MultiNodeMax: 100, NominationGrace: c.Opts.NominationGrace,
			SingleNodeSimulations: planner.DefaultOptions().SingleNodeSimulations, Policies: c.Opts.Policies}})
	metrics.DisruptionDecisionDuration.Observe(time.Since(start).Seconds())
	act, wait, proposals := planner.Validate(plan.Commands, plan.HeldByBudget, c.proposals, now, c.Opts.ValidationDelay)
	c.proposals = proposals
	if len(wait) == 0 {
		// Otherwise single-node consolidation looks at the same nodes
		// again, so that a choice held back can be confirmed.
		c.cursor = plan.NextSingleNodeCursor
	}
	plan.MarkWaiting(wait, proposals, c.Opts.ValidationDelay)
	for _, cmd := range act {
		if err := c.execute(ctx, cmd, idx, now); err != nil {
			log.FromContext(ctx).Error(err, "disruption command failed", "reason", cmd.Reason, "nodeclaims", cmd.Claims)
			continue
		}
		recordScores("approved", cmd.Scores)
	}
	recordScores("rejected", plan.Rejected)
	for name, why := range plan.RepairBlocked {
		if np := idx.pools[name]; np != nil {
			c.Recorder.Event(np, corev1.EventTypeWarning, "NodeRepairBlocked", why)
		}
	}
	c.persistStarts(ctx, cluster, now)
	c.attrition(ctx, plan, cluster, now)
	c.publish(ctx, plan, cluster, idx, now)
	return plan, nil
}

// cloudDrift asks the provider, for each initialized claim, whether its
// instance drifted from its NodeClass.
func (c *Controller) cloudDrift(ctx context.Context, cluster *snapshot.Cluster) map[string]string {
	out := map[string]string{}
	for _, nc := range cluster.NodeClaims {
		if nc.DeletionTimestamp != nil || !drift.Eligible(nc) {
			continue
		}
		reason, err := c.Cloud.IsDrifted(ctx, nc)
		if err != nil {
			log.FromContext(ctx).V(1).Info("cannot tell whether the instance drifted", "nodeclaim", nc.Name, "error", err.Error())
			continue
		}
		if reason != "" {
			out[nc.Name] = reason
		}
	}
	return out
}

func key(name string) types.NamespacedName { return types.NamespacedName{Name: name} }

// recordScores exports Balanced NodePools' verdicts on consolidation moves.
func recordScores(decision string, scores []planner.Score) {
	for _, s := range scores {
		v := s.Value
		if math.IsInf(v, 1) {
			v = math.MaxFloat64 // lands in the +Inf bucket
		}
		metrics.ConsolidationScore.WithLabelValues(decision, s.NodePool, "Balanced").Observe(v)
		metrics.ConsolidationMoves.WithLabelValues(decision, s.NodePool, "Balanced").Inc()
	}
}

package provisioning

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/learned"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/observe"
	"github.com/nodewright/nodewright/internal/room"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// Options tune the provisioner.
type Options struct {
	// BatchIdle closes a batch when no new pending pod came for this long.
	BatchIdle time.Duration
	// BatchMax closes a batch this long after it opened, however busy.
	BatchMax time.Duration
	// EarlyLaunch, while a batch is open, plans its pods this often and
	// launches the NodeClaims they fill (EarlyFill) without waiting for the
	// close; 0 (the default) launches only at the close, as Karpenter does.
	// Off by default: at 10,000 pods it halved each pod's wait for a node
	// but made 10 to 20% more nodes at 1.4 to 2.9% more an hour, and
	// simulate does not model the pods' arrival it depends on
	// (docs/provisioning.md).
	EarlyLaunch time.Duration
	// EarlyFill is the share of the type the solver sized a NodeClaim for
	// that its pods must fill for a pass to launch it while pods keep
	// coming (Hold.MinFill; 0: DefaultEarlyFill).
	EarlyFill float64
	// NominationGrace keeps pods reserved on a NodeClaim this long after its
	// node initialized, while kube-scheduler binds them.
	NominationGrace time.Duration
	// CreateConcurrency bounds parallel NodeClaim creates.
	CreateConcurrency int
	// Resync triggers a batch this often even without events, so a pod that
	// could not be placed is retried when something the watches miss changes.
	Resync time.Duration
	// UntriedAfter also plans pending pods kube-scheduler has not yet tried
	// this long after their creation; 0 waits for the scheduler's verdict.
	UntriedAfter time.Duration
	// ReplanDisplaced plans again, without waiting for NominationGrace, the
	// pods an initialized node has no room left for (snapshot.Options
	// ReleaseDisplaced).
	ReplanDisplaced bool
	// MarkDisplaced lists the pods planned again that way on the NodeClaim
	// they are planned onto (snapshot.DisplacedPodsAnnotation), for the
	// lifecycle controller's NominateDisplaced, which sets it.
	MarkDisplaced bool
	// Policies are --min-values-policy and --preference-policy.
	Policies solver.Policies
	// PodEventQPS bounds the Nominated events sent a second (0:
	// DefaultPodEventQPS); see nominationEvents.
	PodEventQPS float32
}

// DefaultOptions are Karpenter's batch windows and our defaults for the rest.
func DefaultOptions() Options {
	return Options{BatchIdle: time.Second, BatchMax: 10 * time.Second, EarlyFill: DefaultEarlyFill, NominationGrace: time.Minute,
		CreateConcurrency: 32, Resync: 30 * time.Second, UntriedAfter: 3 * time.Second, ReplanDisplaced: true}
}

// Provisioner is the provisioning loop. It runs only on the elected leader.
type Provisioner struct {
	Client    client.Client // reads come from the informer cache
	APIReader client.Reader // reads straight from the API server
	Cloud     cloudprovider.CloudProvider
	Learned   *learned.Store
	Recorder  record.EventRecorder
	Opts      Options
	Batcher   *Batcher
	// Stores, when set, are the cache's informer stores each pass reads the
	// cluster from, and the Nominated events their pods from, without
	// copying each object out of the cache; nil reads through Client. Set
	// it before Start.
	Stores *observe.Stores

	mu sync.Mutex
	// expected holds NodeClaims this process wrote, with the nominations it
	// wrote, until the cache shows them: planning on a cache that does not
	// yet hold them would launch for the same pods again.
	expected map[string]expectation
	// events sends the pods' Nominated events, paced, while Start runs.
	events *nominationEvents
	// planned holds the pods the last pass could plan: an update of one of
	// them is not new work for the batcher (see OnPod).
	planned map[types.UID]struct{}
	// heldSince is when each pod the last pass held back was first held
	// (Launchable); only the provisioning loop uses it.
	heldSince map[types.UID]time.Time
	// arrived is when the last unbound pod was created (Unix nanoseconds,
	// OnArrival): pods keep coming while it is within BatchIdle.
	arrived atomic.Int64
	// requests keeps each pod's summed requests from pass to pass: every
	// solve reads the pods of every node, and at 40,000 pods summing them
	// afresh each pass took about a tenth of the controller's CPU.
	requests solver.Requests
}

// OnPod is told of a pending pod the provisioner may plan, as the pod
// watch adds or updates it. A pod that just became plannable is new work and
// holds the batch open (Batcher.Trigger). An update of a pod the last pass
// planned only asks for a batch (Batcher.Poke), and so does kube-scheduler's
// verdict on a pod older than UntriedAfter: OnUntriedDue brought that pod as
// new work already. In a burst kube-scheduler hands out its first verdicts
// for tens of seconds after the last pod was created, and were each one new
// work, the batch open at the end of the burst would last until BatchMax.
func (p *Provisioner) OnPod(pod *corev1.Pod) {
	due := p.Opts.UntriedAfter > 0 && time.Since(pod.CreationTimestamp.Time) >= p.Opts.UntriedAfter
	if due || p.wasPlanned(pod.UID) {
		p.Batcher.Poke()
		return
	}
	p.Batcher.Trigger()
}

// OnArrival is told of every new unbound pod, whether or not it will need
// a node: while they keep coming, a pass holds back its part-filled
// NodeClaims (Launchable). Pods that go onto room already there make no
// new work for the batcher, so a burst the nodes keep up with closes
// batch after batch for idleness, and each close would launch the last
// pods of each shape small nodes of their own.
func (p *Provisioner) OnArrival() { p.arrived.Store(time.Now().UnixNano()) }

// streaming reports whether an unbound pod was created within BatchIdle.
func (p *Provisioner) streaming(now time.Time) bool {
	return now.Sub(time.Unix(0, p.arrived.Load())) < p.Opts.BatchIdle
}

// OnUntriedDue is told that a pod kube-scheduler has not tried may now be
// planned without its verdict (Options.UntriedAfter after its creation).
func (p *Provisioner) OnUntriedDue(uid types.UID) {
	if !p.wasPlanned(uid) {
		p.Batcher.Trigger()
	}
}

func (p *Provisioner) wasPlanned(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.planned[uid]
	return ok
}

func (p *Provisioner) setPlanned(planned map[types.UID]struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.planned = planned
}

type expectation struct {
	nominations string
	since       time.Time
}

// New returns a provisioner.
func New(c client.Client, apiReader client.Reader, cp cloudprovider.CloudProvider, store *learned.Store, rec record.EventRecorder, opts Options) *Provisioner {
	return &Provisioner{Client: c, APIReader: apiReader, Cloud: cp, Learned: store, Recorder: rec, Opts: opts,
		Batcher: newBatcher(opts), expected: map[string]expectation{},
		events: newNominationEvents(c, rec, opts.PodEventQPS)}
}

func newBatcher(opts Options) *Batcher {
	b := NewBatcher(opts.BatchIdle, opts.BatchMax)
	b.Early = opts.EarlyLaunch
	return b
}

// Start runs batches until ctx ends. It implements manager.Runnable.
func (p *Provisioner) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("provisioner")
	ctx = log.IntoContext(ctx, logger)
	if p.Stores != nil {
		p.events.cache = storePods{store: p.Stores.Pods()}
	}
	go p.resync(ctx)
	go p.events.run(ctx)
	p.Batcher.Trigger() // pods may have waited while no leader ran
	for {
		pass := p.Batcher.Wait(ctx)
		if pass == Stop {
			return nil
		}
		if err := p.pass(ctx, pass == Early); err != nil {
			logger.Error(err, "provisioning loop failed; retrying")
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
			p.Batcher.Trigger()
		}
	}
}

func (p *Provisioner) resync(ctx context.Context) {
	if p.Opts.Resync <= 0 {
		return
	}
	t := time.NewTicker(p.Opts.Resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.Batcher.Poke()
		}
	}
}

// errCacheBehind says the cache does not yet show this process's own writes.
var errCacheBehind = errors.New("informer cache does not yet show the NodeClaims this controller created")

// pass runs one provisioning loop over a fresh snapshot. An early pass, and
// any pass while unbound pods keep coming (OnArrival), launches only the
// NodeClaims Launchable lets go; the pods of the others stay pending, for
// the next pass.
func (p *Provisioner) pass(ctx context.Context, early bool) error {
	logger := log.FromContext(ctx)
	if err := p.waitForCache(ctx); err != nil {
		return err
	}
	seen, err := p.Stores.Look(ctx, p.Client)
	if err != nil {
		return err
	}
	cluster, overlays := &seen.Cluster, seen.Overlays
	now := time.Now()
	ours := snapshot.NominatedNodes(cluster.NodeClaims, snapshot.IndexNodes(cluster.Nodes))
	planned, states := classify(cluster.Pods, ours, now, p.Opts.UntriedAfter)
	provisionable := len(planned)
	p.setPlanned(planned)
	metrics.PodsState.Reset()
	for k, n := range states {
		metrics.PodsState.WithLabelValues(k[0], k[1]).Set(float64(n))
	}
	draining := false
	for _, nc := range cluster.NodeClaims {
		draining = draining || nc.DeletionTimestamp != nil
	}
	if provisionable == 0 && !draining {
		metrics.SchedulingQueueDepth.WithLabelValues("provisioner").Set(0)
		metrics.UnschedulablePods.Set(0)
		return nil
	}
	poolTypes, poolErrs, overlayErrs := ResolveTypes(ctx, p.Cloud, p.Learned, cluster.NodePools, overlays)
	for _, o := range overlays {
		if err, bad := overlayErrs[o.Name]; bad {
			p.Recorder.Eventf(o, corev1.EventTypeWarning, "InvalidNodeOverlay", "%v", err)
		}
	}
	// The pods draining nodes will evict are planned too, as Karpenter
	// does: if no node has room for them, one is launched before they are
	// evicted, and the drain waits for it (termination.NoRoom).
	res := snapshot.Build(cluster, poolTypes, snapshot.Options{Now: now, NominationGrace: p.Opts.NominationGrace,
		UntriedAfter: p.Opts.UntriedAfter, MoveDraining: true, ReleaseDisplaced: p.Opts.ReplanDisplaced, Policies: p.Opts.Policies})
	for name, err := range poolErrs {
		res.PoolErrors[name] = err
	}
	pools := map[string]*karpv1.NodePool{}
	for _, np := range cluster.NodePools {
		pools[np.Name] = np
		if err, bad := res.PoolErrors[np.Name]; bad && np.DeletionTimestamp == nil {
			p.Recorder.Eventf(np, corev1.EventTypeWarning, "NodePoolNotReady", "%v", err)
		}
	}
	metrics.SchedulingQueueDepth.WithLabelValues("provisioner").Set(float64(len(res.Input.Pods)))
	if len(res.Input.Pods) == 0 {
		metrics.UnschedulablePods.Set(0)
		return nil
	}

	start := time.Now()
	res.Input.Requests = &p.requests
	defer p.requests.Prune()
	plan, err := solver.Solve(res.Input)
	if err == nil {
		plan, err = roomApart(res.Input, plan, room.Homeless(res))
	}
	if err == nil {
		var reclaimed map[string]bool
		if plan, reclaimed, err = planner.ReclaimAttrition(res.Input, plan); err == nil && len(reclaimed) > 0 {
			p.stopAttrition(ctx, cluster, reclaimed)
		}
	}
	metrics.SchedulingDuration.WithLabelValues("provisioner").Observe(time.Since(start).Seconds())
	if err != nil {
		return fmt.Errorf("planning %d pending pods: %w", len(res.Input.Pods), err)
	}
	plan.Unschedulable = pendingOnly(plan.Unschedulable, res.Draining)
	metrics.UnschedulablePods.Set(float64(len(plan.Unschedulable)))
	var held []*solver.NewClaim
	waitedOut := 0 // part-filled NodeClaims launched for a pod held back too long
	streaming := early || (p.Opts.EarlyLaunch > 0 && p.streaming(time.Now()))
	if streaming {
		now := time.Now()
		plan.NewClaims, held, waitedOut = Launchable(plan.NewClaims, Hold{MinFill: p.earlyFill(), MaxWait: p.Opts.BatchMax, Now: now, Since: p.heldSince})
		p.heldSince = HeldSince(p.heldSince, held, now)
	} else {
		p.heldSince = nil
	}
	logger.Info("planned pending pods", "pods", len(res.Input.Pods)-len(res.Draining), "draining", len(res.Draining), "nominatedEarlier", res.Nominated,
		"displaced", len(res.Displaced), "newNodeClaims", len(plan.NewClaims), "unschedulable", len(plan.Unschedulable), "duration", time.Since(start).String(),
		"early", early, "streaming", streaming, "heldNodeClaims", len(held), "waitedOutNodeClaims", waitedOut)
	if len(held) > 0 {
		// Their pods are planned again by the next pass, the batch's close
		// or, once pods stop coming, one a BatchIdle from now.
		p.Batcher.Trigger()
	}

	var displaced map[types.UID]bool
	if p.Opts.MarkDisplaced {
		displaced = res.Displaced
	}
	created := p.createClaims(ctx, pools, plan, displaced)
	p.nominateInFlight(ctx, cluster, ours, res, plan, displaced)
	p.recordUnschedulable(plan)
	if created < len(plan.NewClaims) {
		return fmt.Errorf("created %d of %d NodeClaims", created, len(plan.NewClaims))
	}
	return nil
}

func (p *Provisioner) earlyFill() float64 {
	if p.Opts.EarlyFill > 0 {
		return p.Opts.EarlyFill
	}
	return DefaultEarlyFill
}

// waitForCache waits, up to a deadline, until the cache shows every
// NodeClaim this process created or nominated pods to. Writes the API server
// refused or that were deleted since are dropped from the watch list.
func (p *Provisioner) waitForCache(ctx context.Context) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		p.mu.Lock()
		pending := make(map[string]expectation, len(p.expected))
		for k, v := range p.expected {
			pending[k] = v
		}
		p.mu.Unlock()
		if len(pending) == 0 {
			return nil
		}
		for name, exp := range pending {
			nc := &karpv1.NodeClaim{}
			err := p.Client.Get(ctx, types.NamespacedName{Name: name}, nc)
			switch {
			case err == nil && (exp.nominations == "" || nc.Annotations[snapshot.NominatedPodsAnnotation] == exp.nominations || nc.DeletionTimestamp != nil):
				p.forget(name)
			case err == nil || apierrors.IsNotFound(err):
				// Gone from the API server too: nothing left to wait for.
				if time.Since(exp.since) > 2*time.Second {
					live := &karpv1.NodeClaim{}
					if gerr := p.APIReader.Get(ctx, types.NamespacedName{Name: name}, live); apierrors.IsNotFound(gerr) ||
						(gerr == nil && live.Annotations[snapshot.NominatedPodsAnnotation] != exp.nominations) {
						p.forget(name)
					}
				}
			default:
				return fmt.Errorf("reading NodeClaim %s from the cache: %w", name, err)
			}
		}
		p.mu.Lock()
		left := len(p.expected)
		p.mu.Unlock()
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errCacheBehind
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (p *Provisioner) expect(name, nominations string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expected[name] = expectation{nominations: nominations, since: time.Now()}
}

func (p *Provisioner) forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.expected, name)
}

// classify sorts pods for a pass: the UIDs of those it may plan (pods
// kube-scheduler found unschedulable, or has not tried for untriedAfter),
// and the number of pods by phase and provisioning state, for the
// nodewright_pods_state gauge.
func classify(pods []*corev1.Pod, ours snapshot.Nominated, now time.Time, untriedAfter time.Duration) (map[types.UID]struct{}, map[[2]string]int) {
	planned := map[types.UID]struct{}{}
	states := map[[2]string]int{}
	for _, pod := range pods {
		state := "waiting-for-scheduler"
		switch {
		case pod.Spec.NodeName != "":
			state = "bound"
		case ours.ProvisionableAt(pod, now, 0):
			planned[pod.UID] = struct{}{}
			state = "unschedulable"
		case ours.ProvisionableAt(pod, now, untriedAfter):
			planned[pod.UID] = struct{}{}
		}
		states[[2]string{string(pod.Status.Phase), state}]++
	}
	return planned, states
}

// pendingOnly drops the pods of draining nodes: they still run, and a
// FailedScheduling event or the unschedulable gauge would say otherwise.
func pendingOnly(us []solver.Unschedulable, draining map[types.UID]string) []solver.Unschedulable {
	if len(draining) == 0 {
		return us
	}
	out := us[:0:0]
	for _, u := range us {
		if _, ok := draining[u.Pod.UID]; !ok {
			out = append(out, u)
		}
	}
	return out
}

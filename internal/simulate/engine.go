package simulate

import (
	"context"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/catalog"
	"github.com/nodewright/nodewright/internal/cloudprovider/offline"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/kubescheduler"
	"github.com/nodewright/nodewright/internal/manifests"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// Options configure a run.
type Options struct {
	// Timeline says what happens; nil is DefaultTimeline().
	Timeline *Timeline
	// Catalog is the instance-type catalog of KWOKNodeClasses; nil is
	// kwok.BuiltinCatalog().
	Catalog *catalog.Catalog
	// AWSCatalog is the catalog EC2NodeClasses launch from, one region's;
	// nil is a built-in AWS catalog: of the region the EC2NodeClasses'
	// subnets are in when they agree (Result.Region says so), else of
	// us-east-1.
	AWSCatalog *catalog.Catalog
	// Progress, when set, is told how far the run has got, about once per
	// simulated minute.
	Progress func(done, total time.Duration)
	// DisruptionInterval is the disruption loop's period, the controller's
	// --disruption-interval; zero is the controller's default, 10s.
	DisruptionInterval time.Duration
}

// Engine is one simulation run. It is the imperative shell around the
// controller's pure core: it owns the simulated cluster's objects and
// changes them as the API server, kube-scheduler, the kubelets and the
// controller's actions would.
type Engine struct {
	// staticWarned holds the static NodePools whose launch failure was
	// reported, so it is said once.
	staticWarned map[string]bool
	tl           *Timeline
	opts         Options
	start        time.Time
	now          time.Time
	cloud        *cloud

	pools    []*karpv1.NodePool
	classes  map[string]*kwokv1alpha1.KWOKNodeClass
	overlays []*karpv1alpha1.NodeOverlay
	claims   []*karpv1.NodeClaim // sorted by name
	// starting are the claims launched and not yet initialized, in launch
	// order: the only ones the lifecycle step looks at.
	starting   []*karpv1.NodeClaim
	claimState map[string]*claimState
	nodes      []*corev1.Node
	nodeByName map[string]*corev1.Node
	pods       []*corev1.Pod
	podState   map[types.UID]*podState
	workloads  []manifests.Workload
	nextIndex  map[string]int // per workload key, the next pod's index
	daemonSets []*appsv1.DaemonSet
	pdbs       []*policyv1.PodDisruptionBudget
	pvs        []*corev1.PersistentVolume
	pvcs       []*corev1.PersistentVolumeClaim
	scs        []*storagev1.StorageClass
	namespaces []*corev1.Namespace

	poolTypes  snapshot.PoolTypes
	poolErrs   map[string]error
	typesStale bool

	seq     int // NodeClaim name counter
	started map[string][]time.Time
	cursor  int
	// proposals are consolidation's choices held back for validation.
	proposals planner.Proposals

	// provisioning batch window
	batchOpen               bool
	batchStart, lastTrigger time.Time
	// changed is set by anything the provisioner or the planner could
	// decide differently on; each loop clears its own flag.
	provisionChanged, disruptChanged bool
	nextDisrupt                      time.Time
	// quietUntil is when the planner must run again though nothing
	// changed: a consolidateAfter, an expiry or a budget window falls due.
	quietUntil time.Time
	// nextJobEnd is the earliest instant a running pod's duration ends;
	// zero for none.
	nextJobEnd time.Time
	// removedPods says the pod list holds removed pods to compact.
	removedPods bool
	// scheduleChanged says kube-scheduler has something to try: a pod
	// arrived or left, a node initialized or a taint changed.
	scheduleChanged bool
	// schedCache keeps what the scheduler derives from each pod.
	schedCache *kubescheduler.Cache
	// solveMemo keeps what the disruption planner's solves read off each
	// pod, across loops: simulated pods never change.
	solveMemo *solver.Requests

	unschedulable []solver.Unschedulable
	rec           *recorder
}

// claimState is what the simulation knows of a claim beyond the object.
type claimState struct {
	offering      offering
	launched      time.Time
	registerAt    time.Time
	initAt        time.Time // zero until registered
	deletedReason string
	// drainDeadline is when a deleting claim's remaining pods are forced
	// off (terminationGracePeriod); zero for none.
	drainDeadline time.Time
}

// podState is what the simulation knows of a pod beyond the object.
type podState struct {
	// runFor is how long the pod runs once bound; zero runs forever.
	runFor time.Duration
	endsAt time.Time
	owner  string // workload key, "" for none
	// cpu and mem cache the pod's requests once cached is set.
	cpu, mem int64
	cached   bool
}

// New prepares a run over set. Objects the simulator cannot model are
// reported as problems on the Set's loader side; New fails only when the
// input cannot be simulated at all.
func New(set *manifests.Set, opts Options) (*Engine, error) {
	tl := opts.Timeline
	if tl == nil {
		tl = DefaultTimeline()
	}
	if err := tl.Check(set); err != nil {
		return nil, err
	}
	start, err := runStart(tl, set)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tl.label(), err)
	}
	e := &Engine{tl: tl, opts: opts, start: start, now: start,
		classes: map[string]*kwokv1alpha1.KWOKNodeClass{}, claimState: map[string]*claimState{},
		nodeByName: map[string]*corev1.Node{}, podState: map[types.UID]*podState{}, nextIndex: map[string]int{},
		started: map[string][]time.Time{}, typesStale: true, rec: newRecorder(), staticWarned: map[string]bool{},
		solveMemo: solver.NewRequests()}
	for _, c := range set.NodeClasses {
		e.classes[c.Name] = c.DeepCopy()
	}
	ec2 := map[string]*awsv1.EC2NodeClass{}
	for _, c := range set.EC2NodeClasses {
		ec2[c.Name] = c.DeepCopy()
	}
	p, err := offline.New(offline.Options{KWOKCatalog: opts.Catalog, AWSCatalog: opts.AWSCatalog, KWOKClasses: e.classes, EC2Classes: ec2})
	if err != nil {
		return nil, err
	}
	e.cloud = newCloud(p, e.classes)
	for _, np := range set.NodePools {
		e.pools = append(e.pools, np.DeepCopy())
	}
	for _, o := range set.NodeOverlays {
		e.overlays = append(e.overlays, o.DeepCopy())
	}
	if err := e.checkPools(); err != nil {
		return nil, err
	}
	e.daemonSets, e.pdbs, e.pvs, e.pvcs, e.scs, e.namespaces = set.DaemonSets, set.PDBs, set.PVs, set.PVCs, set.StorageClasses, set.Namespaces
	e.workloads = set.Workloads()
	for _, n := range set.Nodes {
		n = n.DeepCopy()
		e.nodes = append(e.nodes, n)
		e.nodeByName[n.Name] = n
	}
	if err := e.adoptClaims(set.NodeClaims); err != nil {
		return nil, err
	}
	for _, p := range set.Pods {
		e.addPod(p.DeepCopy(), e.ownerKey(p))
	}
	// New pods of a workload are numbered after those it has, so that
	// their names do not clash with the expanded ones.
	for _, p := range e.pods {
		if st := e.podState[p.UID]; st != nil && st.owner != "" {
			e.nextIndex[st.owner]++
		}
	}
	return e, nil
}

func workloadKey(w manifests.Workload) string { return w.Kind + "/" + w.Namespace + "/" + w.Name }

// ownerKey names the workload a pod belongs to, "" for none.
func (e *Engine) ownerKey(p *corev1.Pod) string {
	for _, w := range e.workloads {
		if w.Selects(p) {
			return workloadKey(w)
		}
	}
	return ""
}

// Run simulates the timeline to its end and returns what happened.
func (e *Engine) Run(ctx context.Context) (*Result, error) {
	end := e.start.Add(e.tl.Duration.Duration)
	events := e.schedule()
	step := e.tl.Step.Duration
	nextSample := e.start
	lastProgress := e.start
	for !e.now.After(end) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for len(events) > 0 && !e.start.Add(events[0].at).After(e.now) {
			if err := e.apply(events[0]); err != nil {
				return nil, err
			}
			events = events[1:]
		}
		e.endJobs()
		e.lifecycle()
		e.drain()
		e.staticLoop()
		e.scheduleLoop()
		if err := e.provisionLoop(); err != nil {
			return nil, err
		}
		if !e.now.Before(e.nextDisrupt) {
			e.disruptionLoop()
			e.nextDisrupt = e.now.Add(e.disruptionInterval())
		}
		if !e.now.Before(nextSample) {
			e.rec.sample(e)
			nextSample = nextSample.Add(e.tl.Sample.Duration)
		}
		if e.opts.Progress != nil && e.now.Sub(lastProgress) >= time.Minute {
			e.opts.Progress(e.now.Sub(e.start), e.tl.Duration.Duration)
			lastProgress = e.now
		}
		if e.removedPods {
			e.compactPods()
			e.removedPods = false
		}
		e.now = e.now.Add(step)
	}
	if e.opts.Progress != nil {
		e.opts.Progress(e.tl.Duration.Duration, e.tl.Duration.Duration)
	}
	return e.result(), nil
}

// disruptionInterval is the controller's default loop period.
const disruptionInterval = 10 * time.Second

func (e *Engine) disruptionInterval() time.Duration {
	if e.opts.DisruptionInterval > 0 {
		return e.opts.DisruptionInterval
	}
	return disruptionInterval
}

// scheduled is one occurrence of a timeline event.
type scheduled struct {
	at    time.Duration
	index int // in the timeline, for messages and a stable order
	n     int // occurrence number of a repeated event
	event Event
}

// schedule lists every occurrence of every event, in time order; events at
// the same instant happen in the timeline's order.
func (e *Engine) schedule() []scheduled {
	var out []scheduled
	for i, ev := range e.tl.Events {
		for n, at := range ev.occurrences(e.tl.Duration.Duration) {
			out = append(out, scheduled{at: at, index: i, n: n, event: ev})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].at != out[j].at {
			return out[i].at < out[j].at
		}
		return out[i].index < out[j].index
	})
	return out
}

// resolveTypes refreshes the NodePools' instance types when the pools or
// classes changed, through the controller's own ResolveTypes.
func (e *Engine) resolveTypes() {
	if !e.typesStale {
		return
	}
	e.poolTypes, e.poolErrs, _ = provisioning.ResolveTypes(context.Background(), e.cloud, nil, e.pools, e.overlays)
	e.typesStale = false
}

// cluster is the snapshot the core reads. The objects are the engine's
// own; the core does not change them.
func (e *Engine) cluster() *snapshot.Cluster {
	return &snapshot.Cluster{NodePools: e.pools, NodeClaims: e.claims, Nodes: e.nodes, Pods: e.pods,
		DaemonSets: e.daemonSets, PVCs: e.pvcs, PVs: e.pvs, StorageClasses: e.scs, Namespaces: e.namespaces}
}

func (e *Engine) pool(name string) *karpv1.NodePool {
	for _, np := range e.pools {
		if np.Name == name {
			return np
		}
	}
	return nil
}

func (e *Engine) claim(name string) *karpv1.NodeClaim {
	i := sort.Search(len(e.claims), func(i int) bool { return e.claims[i].Name >= name })
	if i < len(e.claims) && e.claims[i].Name == name {
		return e.claims[i]
	}
	return nil
}

func (e *Engine) insertClaim(nc *karpv1.NodeClaim) {
	i := sort.Search(len(e.claims), func(i int) bool { return e.claims[i].Name >= nc.Name })
	e.claims = append(e.claims, nil)
	copy(e.claims[i+1:], e.claims[i:])
	e.claims[i] = nc
}

func (e *Engine) nextClaimName(pool string) string {
	e.seq++
	return fmt.Sprintf("%s-%05d", pool, e.seq)
}

package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/disruption/planner"
)

// leaseDuration and retryPeriod are controllerArgs' lease timers: a standby
// may take a lease its holder stopped renewing leaseDuration after it last
// saw it renewed, and tries every retryPeriod.
const leaseDuration, retryPeriod = 4 * time.Second, 500 * time.Millisecond

// takeoverSlack allows for the API server's latency and this test's
// polling on top of leaseDuration+retryPeriod. On two cores busy with a
// 1,000-pod scale-up, the standby's lease requests time out (1.5 s each)
// for several seconds at a time: takeovers of 4.1 s are typical there, and
// 10.3 s was seen.
const takeoverSlack = 8 * time.Second

// withStandby runs a second controller replica beside the shared one for
// the test. At the end the standby is stopped and the shared controller
// (replica 0, the one main_test started and later tests expect) runs.
func withStandby(t *testing.T) {
	t.Helper()
	if err := env.StartReplica(1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.KillReplica(1, syscall.SIGTERM); err != nil {
			t.Error(err)
		}
		if !env.ControllerRunning() {
			if err := env.StartController(); err != nil {
				t.Error(err)
			}
		}
	})
}

// takeover is one SIGKILL of the leader and what followed.
type takeover struct {
	killed int           // the replica killed
	took   time.Duration // from the kill to a new holder in the lease
}

// killLeader waits for a leader, SIGKILLs it, measures how long the lease
// takes to change hands, and restarts the killed replica as a standby. It
// fails the test if the takeover takes longer than the lease allows.
func killLeader(t *testing.T) takeover {
	t.Helper()
	var leader int
	var lease struct{ holder string }
	eventually(t, 2*time.Minute, "a replica to lead", func() (bool, error) {
		i, err := env.Leader()
		if err != nil || i < 0 {
			return false, err
		}
		l, err := env.Lease(context.Background())
		if err != nil || l.Holder == "" {
			return false, err
		}
		leader, lease.holder = i, l.Holder
		return true, nil
	})
	killed := time.Now()
	if err := env.KillReplica(leader, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var took time.Duration
	eventually(t, time.Minute, "another replica to take the lease", func() (bool, error) {
		l, err := env.Lease(context.Background())
		if err != nil {
			return false, err
		}
		took = time.Since(killed)
		return l.Holder != "" && l.Holder != lease.holder, errorf("holder %q", l.Holder)
	})
	if limit := leaseDuration + retryPeriod + takeoverSlack; took > limit {
		t.Errorf("the standby took the lease %s after the leader died, more than %s", took.Round(time.Millisecond), limit)
	}
	if leader == 0 {
		if err := env.StartController(); err != nil {
			t.Fatal(err)
		}
	} else if err := env.StartReplica(leader); err != nil {
		t.Fatal(err)
	}
	return takeover{killed: leader, took: took}
}

// smallTypes keeps a NodePool to instance types of two and four vCPUs, so
// that its pods spread over many nodes.
var smallTypes = req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large", "m5.large", "r5.large", "c5.xlarge", "m5.xlarge", "r5.xlarge")

// randomMoment sleeps for a random moment up to max: the moment of a kill
// itself, not a stand-in for a condition.
func randomMoment(rng *rand.Rand, max time.Duration) time.Duration {
	d := time.Duration(rng.Int63n(int64(max)))
	time.Sleep(d)
	return d
}

// disruptionRecorder remembers, for every NodeClaim of a pool, each set of
// replacements a disruption recorded on it (planner.ReplacementsAnnotation),
// and every claim seen, polling until stopped.
type disruptionRecorder struct {
	pool string
	mu   sync.Mutex
	sets map[string]map[string]bool // claim -> replacement sets
	seen map[string]bool
	stop chan struct{}
	done chan struct{}
}

func recordDisruptions(pool string) *disruptionRecorder {
	r := &disruptionRecorder{pool: pool, sets: map[string]map[string]bool{}, seen: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			r.look()
			select {
			case <-r.stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return r
}

func (r *disruptionRecorder) look() {
	// Every pool: a replacement may be of another NodePool.
	cs, err := claimsOf("")
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		r.seen[c.Name] = true
		if c.Labels[karpv1.NodePoolLabelKey] != r.pool {
			continue
		}
		if reps := c.Annotations[planner.ReplacementsAnnotation]; reps != "" {
			if r.sets[c.Name] == nil {
				r.sets[c.Name] = map[string]bool{}
			}
			r.sets[c.Name][reps] = true
		}
	}
}

// started reports whether a disruption was recorded on any claim yet.
func (r *disruptionRecorder) started() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sets)
}

// twice stops recording and lists the claims for which more than one set of
// replacements was launched: a disruption started twice. A set recorded but
// never created (the leader died in between; its successor gives the choice
// up after a grace and chooses again) launched nothing and does not count.
func (r *disruptionRecorder) twice() (twice []string, disrupted int) {
	close(r.stop)
	<-r.done
	r.look()
	r.mu.Lock()
	defer r.mu.Unlock()
	return launchedTwice(r.sets, r.seen)
}

// launchedTwice lists the claims of sets (claim -> replacement sets
// recorded on it) with more than one set of which a replacement was seen,
// and counts the claims with one or more.
func launchedTwice(sets map[string]map[string]bool, seen map[string]bool) (twice []string, disrupted int) {
	for claim, recorded := range sets {
		var launched []string
		for set := range recorded {
			for _, name := range strings.Split(set, ",") {
				if seen[name] {
					launched = append(launched, set)
					break
				}
			}
		}
		if len(launched) > 0 {
			disrupted++
		}
		if len(launched) > 1 {
			sort.Strings(launched)
			twice = append(twice, fmt.Sprintf("%s: replacements %s", claim, strings.Join(launched, " and ")))
		}
	}
	sort.Strings(twice)
	return twice, disrupted
}

// TestLaunchedTwiceJudge checks the judge on made-up records; it needs no
// cluster.
func TestLaunchedTwiceJudge(t *testing.T) {
	seen := map[string]bool{"old-a": true, "old-b": true, "old-c": true, "r1": true, "r2": true, "r4": true}
	sets := map[string]map[string]bool{
		"old-a": {"r1": true},                // replaced once
		"old-b": {"r3": true, "r2": true},    // first choice never created, given up, chosen again
		"old-c": {"r4,r5": true, "r1": true}, // two launched sets: twice
	}
	twice, disrupted := launchedTwice(sets, seen)
	if disrupted != 3 {
		t.Errorf("disrupted = %d, want 3", disrupted)
	}
	if len(twice) != 1 || !strings.HasPrefix(twice[0], "old-c:") {
		t.Errorf("twice = %v, want old-c only", twice)
	}
}

// logTakeovers logs who was killed and how long each takeover took.
func logTakeovers(t *testing.T, tos []takeover) {
	t.Helper()
	var parts []string
	for _, to := range tos {
		parts = append(parts, fmt.Sprintf("replica %d killed, lease taken %s later", to.killed, to.took.Round(time.Millisecond)))
	}
	t.Logf("takeovers: %s", strings.Join(parts, "; "))
}

// TestLeaderFailoverDuringScaleUp: with two replicas, the leader is SIGKILLed
// twice during a 1,000-pod scale-up: while the first NodeClaims launch, and
// once its successor has launched NodeClaims of its own. The standby takes
// the lease within the lease duration each time (see takeoverSlack), every
// pod runs, no NodeClaim duplicates another and no node leaks.
func TestLeaderFailoverDuringScaleUp(t *testing.T) {
	const pool, ns = "failover-up", "e2e-failover-up"
	const seed = 20261126
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	withStandby(t)
	nodeClass(t, pool, &kwokv1alpha1.KWOKFaults{RegistrationDelay: &metav1.Duration{Duration: 8 * time.Second}})
	nodePool(t, pool, pool, nil)
	namespace(t, ns)
	t.Cleanup(func() { cleanupWorkload(t, pool, ns) })
	rec := recordClaims(pool)
	sel := map[string]string{karpv1.NodePoolLabelKey: pool}
	for i, shape := range []podShape{{cpu: "250m", memory: "256Mi"}, {cpu: "500m", memory: "1Gi"}, {cpu: "1", memory: "2Gi"}, {cpu: "100m", memory: "512Mi"}} {
		deployment(t, ns, fmt.Sprintf("app-%d", i), 250, sel, shape)
	}
	var tos []takeover
	eventually(t, 2*time.Minute, "the first NodeClaims", func() (bool, error) {
		cs, err := claimsOf(pool)
		return len(cs) > 0, err
	})
	wait := randomMoment(rng, 2*time.Second)
	tos = append(tos, killLeader(t))
	running, other, _ := podCounts(ns)
	t.Logf("kill 1, %s after the first NodeClaims: %d pods running, %d not, %d NodeClaims", wait, running, other, len(mustClaims(t, pool)))
	// The second kill comes once the new leader has launched NodeClaims of
	// its own, while they are in flight, unless every pod runs first.
	before := len(mustClaims(t, pool))
	eventually(t, 5*time.Minute, "the new leader to launch NodeClaims", func() (bool, error) {
		running, _, err := podCounts(ns)
		return len(mustClaims(t, pool)) > before || running == 1000, err
	})
	wait = randomMoment(rng, 2*time.Second)
	tos = append(tos, killLeader(t))
	running, other, _ = podCounts(ns)
	t.Logf("kill 2, %s after the new leader launched NodeClaims: %d pods running, %d not, %d NodeClaims", wait, running, other, len(mustClaims(t, pool)))
	waitRunning(t, ns, 1000, 10*time.Minute)
	claims, nodes, _ := waitNoLeaks(t, pool, 3*time.Minute)
	dups, displaced := checkNoDuplicates(t, rec, ns)
	logTakeovers(t, tos)
	t.Logf("1,000 pods Running on %d nodes / %d NodeClaims after 2 leader SIGKILLs; %d duplicate launches, %d pods planned again as displaced",
		nodes, claims, dups, displaced)
}

// TestLeaderFailoverDuringDriftRollout: with two replicas, a NodePool
// template change drifts every node and the leader is SIGKILLed twice
// during the rollout: when the first disruption is recorded and when half
// the old NodeClaims are gone. The standby takes over; every old NodeClaim
// is replaced, none had its disruption started twice (two sets of
// replacements launched), every pod runs and nothing leaks.
func TestLeaderFailoverDuringDriftRollout(t *testing.T) {
	const pool, ns = "failover-drift", "e2e-failover-drift"
	const seed = 20261127
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	withStandby(t)
	// Replacements take a while to register, so the kills land while they
	// are in flight.
	nodeClass(t, pool, &kwokv1alpha1.KWOKFaults{RegistrationDelay: &metav1.Duration{Duration: 5 * time.Second}})
	// Nodes of two and four vCPUs hold one or two pods each, so the
	// rollout replaces about ten nodes, in waves of a third.
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "34%"}}
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, smallTypes)
	})
	namespace(t, ns)
	t.Cleanup(func() { cleanupWorkload(t, pool, ns) })
	const pods = 20
	deployment(t, ns, "app", pods, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "1500m", memory: "1Gi"})
	waitRunning(t, ns, pods, 5*time.Minute)
	old := map[string]bool{}
	for _, c := range mustClaims(t, pool) {
		old[c.Name] = true
	}
	rec := recordDisruptions(pool)
	patchPool(t, pool, func(np *karpv1.NodePool) { np.Spec.Template.Labels = map[string]string{"release": "two"} })
	var tos []takeover
	eventually(t, 2*time.Minute, "the first disruption", func() (bool, error) { return rec.started() > 0, nil })
	wait := randomMoment(rng, 2*time.Second)
	tos = append(tos, killLeader(t))
	t.Logf("kill 1, %s after the first disruption was recorded: %d of %d old NodeClaims left", wait, oldLeft(t, pool, old), len(old))
	eventually(t, 5*time.Minute, "half the old NodeClaims to go", func() (bool, error) {
		return oldLeft(t, pool, old) <= len(old)/2, nil
	})
	if left := oldLeft(t, pool, old); left > 0 {
		wait = randomMoment(rng, 2*time.Second)
		tos = append(tos, killLeader(t))
		t.Logf("kill 2, %s after half the old NodeClaims went: %d of %d left", wait, left, len(old))
	}
	waitReleased(t, pool, ns, pods, old, "two", 8*time.Minute)
	twice, disrupted := rec.twice()
	for _, tw := range twice {
		t.Errorf("disruption started twice: %s", tw)
	}
	claims, nodes, _ := waitNoLeaks(t, pool, 3*time.Minute)
	logTakeovers(t, tos)
	t.Logf("%d old NodeClaims replaced by %d nodes / %d NodeClaims after %d leader SIGKILLs; %d disrupted with replacements, %d disruptions started twice",
		len(old), nodes, claims, len(tos), disrupted, len(twice))
}

// oldLeft counts the claims of old still in the pool.
func oldLeft(t *testing.T, pool string, old map[string]bool) int {
	t.Helper()
	n := 0
	for _, c := range mustClaims(t, pool) {
		if old[c.Name] {
			n++
		}
	}
	return n
}

// cleanupWorkload removes a failover test's pods and NodePool, and waits a
// while for its nodes to go, so the tests that follow do not share the
// cluster with a thousand pods and their nodes.
func cleanupWorkload(t *testing.T, pool, ns string) {
	ctx := context.Background()
	deps := &appsv1.DeploymentList{}
	if err := kc.List(ctx, deps, client.InNamespace(ns)); err == nil {
		for i := range deps.Items {
			_ = kc.Delete(ctx, &deps.Items[i])
		}
	}
	_ = kc.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}})
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if ns, err := nodesOf(pool); err == nil && len(ns) == 0 {
			return
		}
		time.Sleep(time.Second)
	}
	t.Logf("cleanup: nodes of %s still there after 3 minutes", pool)
}

func deploymentNamed(ns, name string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

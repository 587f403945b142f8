package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
)

// chaosKills is how many leader SIGKILLs TestChaos makes: a few in `make
// test`, NODEWRIGHT_CHAOS_KILLS (100 under `make chaos`) otherwise.
func chaosKills(t *testing.T) int {
	v := os.Getenv("NODEWRIGHT_CHAOS_KILLS")
	if v == "" {
		return 6
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("NODEWRIGHT_CHAOS_KILLS=%q: want a positive number", v)
	}
	return n
}

// TestChaos: two controller replicas; phases alternate a scale-up (a
// Deployment of 60 pods from zero) and a drift rollout (a new NodePool
// template label), and the leader is SIGKILLed at random moments during
// each, 1 to 3 times a phase, until the kills are made. After every phase
// no NodeClaim duplicates another, no disruption was started twice, no node
// leaked, and every pod runs. The seed is NODEWRIGHT_CHAOS_SEED or the
// clock, and is logged.
func TestChaos(t *testing.T) {
	const pool, ns = "chaos", "e2e-chaos"
	const pods = 60
	kills := chaosKills(t)
	seed := time.Now().UnixNano()
	if v := os.Getenv("NODEWRIGHT_CHAOS_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("NODEWRIGHT_CHAOS_SEED=%q: %v", v, err)
		}
	}
	t.Logf("random seed %d (NODEWRIGHT_CHAOS_SEED=%d repeats the run's choices); %d kills", seed, seed, kills)
	rng := rand.New(rand.NewSource(seed))
	began := time.Now()
	withStandby(t)
	nodeClass(t, pool, &kwokv1alpha1.KWOKFaults{RegistrationDelay: &metav1.Duration{Duration: 5 * time.Second}})
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "50%"}}
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, smallTypes)
	})
	namespace(t, ns)
	t.Cleanup(func() { cleanupWorkload(t, pool, ns) })
	sel := map[string]string{karpv1.NodePoolLabelKey: pool}
	shapes := []podShape{{cpu: "250m", memory: "256Mi"}, {cpu: "500m", memory: "1Gi"}, {cpu: "1", memory: "2Gi"}, {cpu: "1500m", memory: "1Gi"}}
	var tos []takeover
	duplicates, twice, leaked, phases := 0, 0, 0, 0
	for release := 1; len(tos) < kills; release++ {
		phases++
		// A scale-up from no pods, kills during it.
		app := fmt.Sprintf("app-%d", release)
		rec := recordClaims(pool)
		deployment(t, ns, app, pods, sel, shapes[rng.Intn(len(shapes))])
		n := 1 + rng.Intn(3)
		for k := 0; k < n && len(tos) < kills; k++ {
			wait := randomMoment(rng, 6*time.Second)
			to := killLeader(t)
			tos = append(tos, to)
			running, _, _ := podCounts(ns)
			t.Logf("phase %d (scale-up): kill %d, %s into it, replica %d, lease taken %s later; %d of %d pods running",
				phases, len(tos), wait, to.killed, to.took.Round(time.Millisecond), running, pods)
		}
		waitRunning(t, ns, pods, 10*time.Minute)
		d, _ := checkNoDuplicates(t, rec, ns)
		duplicates += d
		_, _, l := waitNoLeaks(t, pool, 3*time.Minute)
		leaked += l
		if len(tos) >= kills || t.Failed() {
			break
		}

		// A drift rollout of the nodes the scale-up made, kills during it.
		phases++
		old := map[string]bool{}
		for _, c := range mustClaims(t, pool) {
			old[c.Name] = true
		}
		label := strconv.Itoa(release)
		drec := recordDisruptions(pool)
		patchPool(t, pool, func(np *karpv1.NodePool) { np.Spec.Template.Labels = map[string]string{"release": label} })
		n = 1 + rng.Intn(3)
		for k := 0; k < n && len(tos) < kills; k++ {
			wait := randomMoment(rng, 8*time.Second)
			to := killLeader(t)
			tos = append(tos, to)
			t.Logf("phase %d (drift rollout): kill %d, %s into it, replica %d, lease taken %s later; %d of %d old NodeClaims left",
				phases, len(tos), wait, to.killed, to.took.Round(time.Millisecond), oldLeft(t, pool, old), len(old))
		}
		waitReleased(t, pool, ns, pods, old, label, 10*time.Minute)
		tw, _ := drec.twice()
		for _, x := range tw {
			t.Errorf("disruption started twice: %s", x)
		}
		twice += len(tw)
		_, _, l = waitNoLeaks(t, pool, 3*time.Minute)
		leaked += l
		if t.Failed() {
			break
		}
		// The next scale-up starts from no pods and no nodes; no kill here.
		if err := kc.Delete(context.Background(), deploymentNamed(ns, app)); err != nil {
			t.Fatal(err)
		}
		for _, c := range mustClaims(t, pool) {
			_ = kc.Delete(context.Background(), &c)
		}
		eventually(t, 5*time.Minute, "the phase's nodes to go", func() (bool, error) {
			nodes, err := nodesOf(pool)
			cs, err2 := claimsOf(pool)
			running, other, _ := podCounts(ns)
			return err == nil && err2 == nil && len(nodes) == 0 && len(cs) == 0 && running+other == 0,
				errorf("%d nodes, %d NodeClaims, %d pods left (%v, %v)", len(nodes), len(cs), running+other, err, err2)
		})
	}
	took := make([]time.Duration, len(tos))
	for i, to := range tos {
		took[i] = to.took
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	var median, max time.Duration
	if len(took) > 0 {
		median, max = took[len(took)/2], took[len(took)-1]
	}
	t.Logf("chaos: seed %d, %d leader SIGKILLs over %d phases in %s; %d duplicate NodeClaims, %d disruptions started twice, %d leaked nodes or NodeClaims; takeover median %s, max %s",
		seed, len(tos), phases, time.Since(began).Round(time.Second), duplicates, twice, leaked, median.Round(time.Millisecond), max.Round(time.Millisecond))
}

// waitReleased waits until none of the old claims is left, every node of
// the pool carries release=label and the pods of ns all run.
func waitReleased(t *testing.T, pool, ns string, pods int, old map[string]bool, label string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "every old NodeClaim replaced and every node on release "+label, func() (bool, error) {
		left := oldLeft(t, pool, old)
		nodes, err := nodesOf(pool)
		if err != nil {
			return false, err
		}
		stale := 0
		for _, n := range nodes {
			if n.Labels["release"] != label {
				stale++
			}
		}
		running, other, _ := podCounts(ns)
		return left == 0 && stale == 0 && running == pods && other == 0,
			errorf("%d old NodeClaims left, %d of %d nodes on an older release, %d pods running, %d not", left, stale, len(nodes), running, other)
	})
}

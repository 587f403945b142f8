package e2e

import (
	"fmt"
	"math/rand"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// Test 4: the controller is SIGKILLed at random moments during a 500-pod
// scale-up, 10 times. At the end every pod runs, every node has a NodeClaim
// and every NodeClaim a node (nothing leaked), and no NodeClaim was launched
// for pods another still held (no duplicate). Runs alone: it kills the
// shared controller.
func TestControllerKilledDuringScaleUp(t *testing.T) {
	const pool, ns = "killed", "e2e-killed"
	const seed = 20261122
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	// A registration delay keeps NodeClaims in flight for a while, so kills
	// land between launch and registration too.
	nodeClass(t, pool, &kwokv1alpha1.KWOKFaults{RegistrationDelay: &metav1.Duration{Duration: 8 * time.Second}})
	nodePool(t, pool, pool, nil)
	namespace(t, ns)
	sel := map[string]string{karpv1.NodePoolLabelKey: pool}
	rec := recordClaims(pool)
	shapes := []podShape{{cpu: "250m", memory: "256Mi"}, {cpu: "500m", memory: "1Gi"}, {cpu: "1", memory: "2Gi"}, {cpu: "1500m", memory: "1Gi"}, {cpu: "100m", memory: "3Gi"}}
	created := 0
	for i := 0; i < 10; i++ {
		// The scale-up comes in waves, one Deployment of 100 pods every other
		// kill, so the controller is always busy when it dies.
		if i%2 == 0 && created < len(shapes) {
			deployment(t, ns, fmt.Sprintf("app-%d", created), 100, sel, shapes[created])
			created++
		}
		// Kill at a random moment after the restarted controller got going:
		// on even rounds soon after it won the lease (while it syncs and
		// batches), on odd rounds just after it created NodeClaims (while it
		// launches them and writes nominations).
		before := len(mustClaims(t, pool))
		acted := false
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) && !acted {
			if i%2 == 0 {
				acted = controllerLeads(t)
			} else {
				acted = len(mustClaims(t, pool)) != before
			}
			if !acted {
				time.Sleep(100 * time.Millisecond)
			}
		}
		wait := time.Duration(rng.Intn(2000)) * time.Millisecond
		time.Sleep(wait) // the random moment itself, not a stand-in for a condition
		if err := env.KillController(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		running, other, _ := podCounts(ns)
		t.Logf("kill %d (%s after the controller %s: %v): %d pods running, %d not, %d NodeClaims",
			i+1, wait, map[bool]string{true: "won the lease", false: "created NodeClaims"}[i%2 == 0], acted, running, other, len(mustClaims(t, pool)))
		if err := env.StartController(); err != nil {
			t.Fatal(err)
		}
	}
	waitRunning(t, ns, 500, 8*time.Minute)

	waitNoLeaks(t, pool, time.Minute)
	// A duplicate launch is a NodeClaim made for pods another one still
	// held. A pod whose initialized node the bound pods left no room for is
	// planned again before the grace ends (--replan-displaced-pods); such a
	// relaunch is a displacement, judged from the pods' own record, not a
	// duplicate. Nodes left empty at the end are counted, not failed: when
	// kube-scheduler, slowed by the restarts and the load, binds pods
	// elsewhere than planned, pods are planned again; consolidation reclaims
	// such nodes where it is on (it is off here).
	_, displaced := checkNoDuplicates(t, rec, ns)
	claims := mustClaims(t, pool)
	nodes, err := nodesOf(pool)
	if err != nil {
		t.Fatal(err)
	}
	work, err := workloadPodsPerNode()
	if err != nil {
		t.Fatal(err)
	}
	empty := 0
	for _, n := range nodes {
		if work[n.Name] == 0 {
			empty++
		}
	}
	t.Logf("500 pods Running on %d nodes / %d NodeClaims after 10 SIGKILLs; %d nodes empty at the end; %d pods planned again within the grace, all displaced by the pods bound to their node",
		len(nodes), len(claims), empty, displaced)
}

func mustClaims(t *testing.T, pool string) []karpv1.NodeClaim {
	t.Helper()
	cs, err := claimsOf(pool)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// controllerLeads reports whether the current controller holds the lease:
// its log says it acquired it.
func controllerLeads(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile(env.ControllerLog())
	if err != nil {
		return false
	}
	lines := splitLines(b)
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "starting nodewright controller") {
			return false // reached this process's start without seeing leadership
		}
		if strings.Contains(lines[i], "successfully acquired lease") {
			return true
		}
	}
	return false
}

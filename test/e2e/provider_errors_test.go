package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
)

// TestProviderErrors: with 30% of launch and delete calls failing (30% of
// those throttled, half of the rest after the call took effect, as a lost
// response), 120 pods still all run, and scaling down to 6 with
// consolidation on still removes the nodes: no NodeClaim is left stuck
// deleting, no node outlives its NodeClaim or lacks one, and no NodeClaim
// has two instances. The errors were injected (the provider's events say
// so) and every one reached the controller, which retried it (its log).
func TestProviderErrors(t *testing.T) {
	t.Parallel()
	const pool, ns, app = "provider-errors", "e2e-provider-errors", "app"
	const peak, low = 120, 6
	nodeClass(t, pool, &kwokv1alpha1.KWOKFaults{LaunchErrorPercent: ptr(int32(30)), DeleteErrorPercent: ptr(int32(30)),
		ThrottledPercent: ptr(int32(30)), LostResponsePercent: ptr(int32(50))})
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		consolidating(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized)(np)
		// Three pods a node: some 40 launches, and as many deletions.
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			req(kwok.LabelInstanceCPU, corev1.NodeSelectorOpIn, "2"))
	})
	namespace(t, ns)
	rec := recordClaims(pool)
	deployment(t, ns, app, peak, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "500m", memory: "256Mi"})
	waitRunning(t, ns, peak, 8*time.Minute)
	_, peakNodes := poolPrice(t, pool)
	checkInstances(t, pool, "at the peak")

	scale(t, ns, app, low)
	eventually(t, 8*time.Minute, "consolidation to remove the idle nodes, every deleted NodeClaim gone", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		deleting := 0
		for _, c := range cs {
			if c.DeletionTimestamp != nil {
				deleting++
			}
		}
		running, other, err := podCounts(ns)
		if err != nil {
			return false, err
		}
		_, n := poolPrice(t, pool)
		return deleting == 0 && n <= peakNodes/4 && running == low && other == 0,
			fmt.Errorf("%d nodes (peak %d), %d NodeClaims of which %d deleting, %d pods running, %d not:%s",
				n, peakNodes, len(cs), deleting, running, other, describeClaims(pool))
	})
	seen := rec.Seen()
	checkInstances(t, pool, "after scaling down")
	// Every NodeClaim ever seen that is no longer listed is gone for good,
	// not waiting on its finalizer.
	for _, name := range seen {
		err := kc.Get(context.Background(), client.ObjectKey{Name: name}, &karpv1.NodeClaim{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}

	injected := injectedErrors(t, seen)
	retried := retriedCalls(t, seen)
	t.Logf("%d NodeClaims; injected errors by call and kind: %v; retries the controller logged: %v", len(seen), injected, retried)
	for _, want := range []string{"Create", "Delete", "throttled", "lost response"} {
		if injected[want] == 0 {
			t.Errorf("no injected %s error among %d NodeClaims at 30%%: %v", want, len(seen), injected)
		}
	}
	// Events may be merged or dropped by the recorder's spam filter, never
	// invented: each injected error is at least one retry in the log.
	for _, call := range []string{"Create", "Delete"} {
		if retried[call] < injected[call] {
			t.Errorf("%d injected %s errors, but the controller logged %d failed %s calls retried", injected[call], call, retried[call], call)
		}
	}
	if retried["LaunchTimeout"] > 0 {
		t.Errorf("%d NodeClaims gave up launching (LaunchTimeout) at a 30%% error rate", retried["LaunchTimeout"])
	}
}

// checkInstances fails unless the pool's nodes and NodeClaims match one to
// one (every node has its claim, every launched claim has one node) and the
// kwok provider's own list of instances of these claims agrees.
func checkInstances(t *testing.T, pool, when string) {
	t.Helper()
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := kc.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	cs, err := claimsOf(pool)
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]karpv1.NodeClaim{}
	for _, c := range cs {
		claims[c.Name] = c
	}
	perClaim := map[string]int{}
	for _, n := range nodes.Items {
		owner, ok := n.Annotations[kwok.NodeClaimAnnotation]
		if !ok || (n.Labels[karpv1.NodePoolLabelKey] != pool && !strings.HasPrefix(owner, pool)) {
			continue
		}
		perClaim[owner]++
		c, ok := claims[owner]
		switch {
		case !ok:
			t.Errorf("%s: node %s outlived its NodeClaim %s (leaked)", when, n.Name, owner)
		case c.Status.ProviderID != "" && c.Status.ProviderID != n.Spec.ProviderID:
			t.Errorf("%s: node %s has providerID %s, its NodeClaim %s", when, n.Name, n.Spec.ProviderID, c.Status.ProviderID)
		}
	}
	for name, c := range claims {
		if perClaim[name] > 1 {
			t.Errorf("%s: NodeClaim %s has %d nodes", when, name, perClaim[name])
		}
		if c.Status.ProviderID != "" && c.DeletionTimestamp == nil && perClaim[name] == 0 {
			t.Errorf("%s: launched NodeClaim %s has no node", when, name)
		}
	}
	p, err := kwok.New(kc, kwok.ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	instances, err := p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	perInstance := map[string]int{}
	for _, in := range instances {
		if _, ok := claims[in.Name]; ok || strings.HasPrefix(in.Name, pool) {
			perInstance[in.Name]++
			if _, ok := claims[in.Name]; !ok {
				t.Errorf("%s: the provider lists instance %s, whose NodeClaim is gone", when, in.Status.ProviderID)
			}
		}
	}
	for name, c := range claims {
		if c.Status.ProviderID != "" && c.DeletionTimestamp == nil && perInstance[name] != 1 {
			t.Errorf("%s: the provider lists %d instances of NodeClaim %s", when, perInstance[name], name)
		}
	}
}

// injectedErrors counts, from the events the kwok provider recorded on
// the claims, the errors it injected: by call ("Create", "Delete") and by
// kind ("throttled", "lost response", "transient").
func injectedErrors(t *testing.T, claims []string) map[string]int {
	t.Helper()
	ours := map[string]bool{}
	for _, c := range claims {
		ours[c] = true
	}
	var evs corev1.EventList
	if err := kc.List(context.Background(), &evs); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	reasons := map[string]int32{}
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind != "NodeClaim" || !ours[e.InvolvedObject.Name] {
			continue
		}
		reasons[e.Reason] += max(e.Count, 1)
		var call string
		switch e.Reason {
		case kwok.EventLaunchErrorInjected:
			call = "Create"
		case kwok.EventDeleteErrorInjected:
			call = "Delete"
		default:
			continue
		}
		n := int(max(e.Count, 1))
		out[call] += n
		for _, kind := range []string{"throttled", "lost response", "transient"} {
			if strings.Contains(e.Message, "injected "+kind+" error") {
				out[kind] += n
			}
		}
	}
	t.Logf("events on the NodeClaims by reason: %v", reasons)
	return out
}

// retriedCalls counts, in the controller's log, the failed provider calls
// of the claims that the lifecycle controller retried ("Create",
// "Delete"), and the claims it gave up launching ("LaunchTimeout").
func retriedCalls(t *testing.T, claims []string) map[string]int {
	t.Helper()
	ours := map[string]bool{}
	for _, c := range claims {
		ours[c] = true
	}
	b, err := os.ReadFile(env.ControllerLog())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		// A map, not a struct: encoding/json matches keys without regard
		// to case, and controller-runtime logs "NodeClaim" as an object
		// beside our "nodeclaim".
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if claim, _ := line["nodeclaim"].(string); !ours[claim] {
			continue
		}
		switch msg, _ := line["msg"].(string); {
		case msg == "launching NodeClaim failed; retrying":
			out["Create"]++
		case msg == "deleting instance failed; retrying":
			out["Delete"]++
		case msg == "deleting NodeClaim" && line["reason"] == "LaunchTimeout":
			out["LaunchTimeout"]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

package kwok

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/metrics"
)

func TestDecideFault(t *testing.T) {
	cases := []struct {
		name                    string
		errors, throttled, lost *int32
		draws                   [3]float64
		want                    callFault
	}{
		{"no rate", nil, int32p(100), int32p(100), [3]float64{0, 0, 0}, noFault},
		{"zero rate", int32p(0), nil, nil, [3]float64{0, 0, 0}, noFault},
		{"draw above the rate", int32p(30), nil, nil, [3]float64{0.30, 0, 0}, noFault},
		{"draw below the rate", int32p(30), nil, nil, [3]float64{0.29, 0, 0}, failedCall},
		{"always", int32p(100), nil, nil, [3]float64{0.999, 0.5, 0.5}, failedCall},
		{"throttled", int32p(30), int32p(50), int32p(100), [3]float64{0.1, 0.49, 0}, throttledCall},
		{"not throttled, lost", int32p(30), int32p(50), int32p(50), [3]float64{0.1, 0.5, 0.49}, lostResponse},
		{"not throttled, not lost", int32p(30), int32p(50), int32p(50), [3]float64{0.1, 0.5, 0.5}, failedCall},
		{"out of range clamped", int32p(250), int32p(-5), nil, [3]float64{0.99, 0, 0}, failedCall},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideFault(tc.errors, tc.throttled, tc.lost, tc.draws); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestFaultDrawsAreSeededAndNearTheRate: the same seed draws the same faults
// for the same calls whatever order the claims come in, another seed other
// ones, and the shares come out near the percentages asked for.
func TestFaultDrawsAreSeededAndNearTheRate(t *testing.T) {
	const claims, calls = 400, 25
	sample := func(seed int64, reverse bool) map[string]callFault {
		d := newCallDraws(seed)
		out := map[string]callFault{}
		for i := range claims {
			if reverse {
				i = claims - 1 - i
			}
			for range calls {
				draws, n := d.next("Create", fmt.Sprintf("claim-%d", i))
				out[fmt.Sprintf("claim-%d/%d", i, n)] = decideFault(int32p(30), int32p(40), int32p(50), draws)
			}
		}
		return out
	}
	a, b := sample(7, false), sample(7, true)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("seed 7 drew other faults when the claims came in another order")
	}
	if reflect.DeepEqual(a, sample(8, false)) {
		t.Fatal("seeds 7 and 8 drew the same faults")
	}
	count := map[callFault]int{}
	for _, f := range a {
		count[f]++
	}
	total := float64(claims * calls)
	failed := float64(count[failedCall] + count[throttledCall] + count[lostResponse])
	// Binomial standard deviations are about 0.3%, 0.9% and 1.1% here.
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"failed calls", failed / total, 0.30},
		{"throttled among failed", float64(count[throttledCall]) / failed, 0.40},
		{"lost among failed unthrottled", float64(count[lostResponse]) / float64(count[lostResponse]+count[failedCall]), 0.50},
	} {
		if math.Abs(c.got-c.want) > 0.04 {
			t.Errorf("%s: share %.3f, want %.2f", c.what, c.got, c.want)
		}
	}
}

// TestLostLaunchResponseIsRetriedToTheSameInstance: a launch that created
// the instance but answered with an error is found again by the next
// Create, which returns that instance and launches no other.
func TestLostLaunchResponseIsRetriedToTheSameInstance(t *testing.T) {
	e := newEnv(t, ProviderOptions{FaultSeed: 3})
	class := e.nodeClass(&kwokv1alpha1.KWOKFaults{LaunchErrorPercent: int32p(100), LostResponsePercent: int32p(100)})
	claim := e.claim(class)
	_, err := e.p.Create(e.ctx, claim)
	if err == nil || !strings.Contains(err.Error(), "injected lost response error") || !strings.Contains(err.Error(), "fault seed 3") {
		t.Fatalf("first Create: error %v, want an injected lost response naming the seed", err)
	}
	node := e.mustNode(claim.Name)
	again, err := e.p.Create(e.ctx, claim)
	if err != nil {
		t.Fatalf("second Create: %v", err)
	}
	if again.Status.ProviderID != node.Spec.ProviderID || again.Labels[corev1.LabelInstanceTypeStable] != node.Labels[corev1.LabelInstanceTypeStable] {
		t.Errorf("second Create returned %s (%s), the Node is %s (%s)", again.Status.ProviderID,
			again.Labels[corev1.LabelInstanceTypeStable], node.Spec.ProviderID, node.Labels[corev1.LabelInstanceTypeStable])
	}
	var nodes corev1.NodeList
	if err := e.c.List(e.ctx, &nodes, client.MatchingFields{"metadata.name": claim.Name}); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 || nodes.Items[0].UID != node.UID {
		t.Errorf("%d Nodes for the claim after the retry, want the first one alone", len(nodes.Items))
	}
}

// TestLaunchOverAnUnseenNodeReturnsIt: a retried launch whose cache has not
// seen the Node the lost call made chooses an offering again, which may
// differ; it must answer with the instance that exists.
func TestLaunchOverAnUnseenNodeReturnsIt(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	class := e.nodeClass(nil)
	claim := e.claim(class)
	first := e.mustLaunch(claim)
	nc := &kwokv1alpha1.KWOKNodeClass{}
	if err := e.c.Get(e.ctx, client.ObjectKey{Name: class}, nc); err != nil {
		t.Fatal(err)
	}
	var other candidate
	for _, c := range e.p.candidates(context.Background(), claim) {
		if c.it.Name != first.Labels[corev1.LabelInstanceTypeStable] {
			other = c
			break
		}
	}
	if other.it == nil {
		t.Fatal("no other candidate offering")
	}
	got, err := e.p.launch(e.ctx, claim, nc, kwokv1alpha1.KWOKFaults{}, other)
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[corev1.LabelInstanceTypeStable] != first.Labels[corev1.LabelInstanceTypeStable] || got.Status.ProviderID != first.Status.ProviderID {
		t.Errorf("launch over the existing Node returned %s, the instance is %s", got.Labels[corev1.LabelInstanceTypeStable], first.Labels[corev1.LabelInstanceTypeStable])
	}
}

func TestInjectedThrottlingIsTypedAndDoesNothing(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	class := e.nodeClass(&kwokv1alpha1.KWOKFaults{LaunchErrorPercent: int32p(100), DeleteErrorPercent: int32p(100), ThrottledPercent: int32p(100),
		LostResponsePercent: int32p(100)})
	claim := e.claim(class)
	_, err := e.p.Create(e.ctx, claim)
	if !cloudprovider.IsThrottled(err) || cloudprovider.RetryAfter(err) != ThrottleRetryAfter || metrics.ErrorKind(err) != "ThrottlingError" {
		t.Fatalf("Create: error %v (retry after %s, kind %q), want a throttling error asking for %s", err,
			cloudprovider.RetryAfter(err), metrics.ErrorKind(err), ThrottleRetryAfter)
	}
	if e.node(claim.Name) != nil {
		t.Fatal("a throttled Create made a Node")
	}
}

// TestInjectedDeleteErrors: a failed Delete leaves the instance, a lost
// response deletes it, and the retry then says it is gone.
func TestInjectedDeleteErrors(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	failing := e.nodeClass(&kwokv1alpha1.KWOKFaults{DeleteErrorPercent: int32p(100)})
	claim := e.claim(failing)
	launched := e.mustLaunch(claim)
	claim.Status = launched.Status
	err := e.p.Delete(e.ctx, claim)
	if err == nil || cloudprovider.IsNotFound(err) || cloudprovider.IsThrottled(err) {
		t.Fatalf("Delete: %v, want an injected failure", err)
	}
	if n := e.node(claim.Name); n == nil || n.DeletionTimestamp != nil {
		t.Fatal("a failed Delete deleted the Node")
	}

	losing := e.nodeClass(&kwokv1alpha1.KWOKFaults{DeleteErrorPercent: int32p(100), LostResponsePercent: int32p(100)})
	claim = e.claim(losing)
	launched = e.mustLaunch(claim)
	claim.Status = launched.Status
	if err := e.p.Delete(e.ctx, claim); err == nil || !strings.Contains(err.Error(), "lost response") {
		t.Fatalf("Delete: %v, want an injected lost response", err)
	}
	if n := e.node(claim.Name); n != nil && n.DeletionTimestamp == nil {
		t.Fatal("a Delete whose response was lost left the Node")
	}
	if err := e.p.Delete(e.ctx, claim); !cloudprovider.IsNotFound(err) {
		t.Errorf("Delete again: %v, want not found", err)
	}

	// An instance listed without its claim (garbage collection) takes the
	// default faults, here none.
	listed := e.claim(failing)
	e.mustLaunch(listed)
	if err := e.p.Delete(e.ctx, &karpv1.NodeClaim{Status: karpv1.NodeClaimStatus{ProviderID: ProviderIDPrefix + listed.Name}}); err != nil {
		t.Errorf("Delete of a listed instance: %v", err)
	}
}

// TestEveryInjectedErrorIsCounted: through the metrics decorator, every
// injected error is counted, throttling under its own label.
func TestEveryInjectedErrorIsCounted(t *testing.T) {
	e := newEnv(t, ProviderOptions{FaultSeed: 11})
	class := e.nodeClass(&kwokv1alpha1.KWOKFaults{LaunchErrorPercent: int32p(30), ThrottledPercent: int32p(50), LostResponsePercent: int32p(50)})
	cp := metrics.Decorate(e.p, "kwok-test")
	kinds := map[string]int{}
	for range 30 {
		claim := e.claim(class)
		for {
			_, err := cp.Create(e.ctx, claim)
			if err == nil {
				break
			}
			var throttled *cloudprovider.ThrottledError
			if !strings.Contains(err.Error(), "injected") {
				t.Fatalf("Create: %v", err)
			}
			kind := metrics.ErrorKind(err)
			if errors.As(err, &throttled) != (kind == "ThrottlingError") {
				t.Fatalf("error %v labelled %q", err, kind)
			}
			kinds[kind]++
		}
	}
	if kinds["ThrottlingError"] == 0 || kinds[""] == 0 {
		t.Errorf("errors by kind %v: want both throttling and other errors from 30 launches at 30%%", kinds)
	}
	for kind, n := range kinds {
		if got := counted(t, "kwok-test", "Create", kind); got != float64(n) {
			t.Errorf("karpenter_cloudprovider_errors_total{error=%q} = %v, want %d", kind, got, n)
		}
	}
}

// counted reads karpenter_cloudprovider_errors_total of the kwok provider
// from the registry the controller serves.
func counted(t *testing.T, controller, method, kind string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"controller": controller, "method": method, "provider": ProviderName, "error": kind}
	for _, f := range families {
		if f.GetName() != "karpenter_cloudprovider_errors_total" {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

package kwok

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/testcluster"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

// epoch is where every test's fake clock starts, on a whole second so that
// RFC 3339 annotations lose nothing.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// env is one test's provider on the shared API server, with a fake clock
// and helpers that play the controller calling the provider.
type env struct {
	t     *testing.T
	ctx   context.Context
	c     client.Client
	clock *clocktesting.FakeClock
	opts  ProviderOptions
	p     *Provider
}

func newEnv(t *testing.T, opts ProviderOptions) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	opts.Clock = clk
	e := &env{t: t, ctx: context.Background(), c: cluster.Client, clock: clk, opts: opts}
	e.p = e.restart()
	return e
}

// restart returns a new Provider on the same clock and options, as a
// controller restarted after a crash would have: nothing carried over in
// memory.
func (e *env) restart() *Provider {
	e.t.Helper()
	p, err := New(e.c, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

var names atomic.Int64

// name returns a name no other test uses, short enough for a hostname label.
func name(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, names.Add(1))
}

// nodeClass creates a KWOKNodeClass with faults and returns its name.
func (e *env) nodeClass(faults *kwokv1alpha1.KWOKFaults) string {
	e.t.Helper()
	nc := &kwokv1alpha1.KWOKNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name("class")},
		Spec:       kwokv1alpha1.KWOKNodeClassSpec{Image: "img-1", Faults: faults},
	}
	if err := e.c.Create(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), nc) })
	return nc.Name
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}}
}

// claim creates a NodeClaim of class with requirements; the claim and its
// Node are deleted when the test ends.
func (e *env) claim(class string, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	e.t.Helper()
	return e.createClaim(&karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name("claim"), Labels: map[string]string{karpv1.NodePoolLabelKey: "pool"}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: append([]karpv1.NodeSelectorRequirementWithMinValues{}, reqs...),
			NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: class},
		},
	})
}

func (e *env) createClaim(claim *karpv1.NodeClaim) *karpv1.NodeClaim {
	e.t.Helper()
	if err := e.c.Create(e.ctx, claim); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx := context.Background()
		_ = e.c.Delete(ctx, claim)
		_ = e.c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: claim.Name}})
	})
	return claim
}

// launch calls Create and, on success, saves the result as the controller
// does: labels, annotations and status, with a Launched condition.
func (e *env) launch(p *Provider, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	e.t.Helper()
	out, err := p.Create(e.ctx, claim)
	if err != nil {
		return nil, err
	}
	stored := &karpv1.NodeClaim{}
	if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(claim), stored); err != nil {
		e.t.Fatal(err)
	}
	stored.Labels, stored.Annotations = out.Labels, out.Annotations
	if err := e.c.Update(e.ctx, stored); err != nil {
		e.t.Fatal(err)
	}
	stored.Status = out.Status
	stored.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue,
		Reason: "Launched", LastTransitionTime: metav1.NewTime(e.clock.Now())}}
	if err := e.c.Status().Update(e.ctx, stored); err != nil {
		e.t.Fatal(err)
	}
	return out, nil
}

func (e *env) mustLaunch(claim *karpv1.NodeClaim) *karpv1.NodeClaim {
	e.t.Helper()
	out, err := e.launch(e.p, claim)
	if err != nil {
		e.t.Fatalf("Create(%s): %v", claim.Name, err)
	}
	return out
}

// node returns the Node called name, or nil if there is none.
func (e *env) node(name string) *corev1.Node {
	e.t.Helper()
	n := &corev1.Node{}
	if err := e.c.Get(e.ctx, client.ObjectKey{Name: name}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		e.t.Fatal(err)
	}
	return n
}

func (e *env) mustNode(name string) *corev1.Node {
	e.t.Helper()
	n := e.node(name)
	if n == nil {
		e.t.Fatalf("Node %s does not exist", name)
	}
	return n
}

// sync advances the clock to epoch+at and makes one agent pass with p.
func (e *env) sync(p *Provider, at time.Duration) {
	e.t.Helper()
	e.clock.SetTime(epoch.Add(at))
	if err := p.SyncAgent(e.ctx); err != nil {
		e.t.Fatalf("SyncAgent at +%v: %v", at, err)
	}
}

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func int32p(n int32) *int32 { return &n }

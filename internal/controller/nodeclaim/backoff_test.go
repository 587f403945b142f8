package nodeclaim

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/testkube"
)

func TestRetryDelay(t *testing.T) {
	cases := []struct {
		failures   int
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 0, launchBackoffMin},
		{2, 0, 2 * launchBackoffMin},
		{3, 0, 4 * launchBackoffMin},
		{7, 0, launchBackoffMax},
		{1000, 0, launchBackoffMax},
		{1, 3 * time.Second, 3 * time.Second},
		{7, time.Second, launchBackoffMax},
		{1, 5 * time.Minute, 5 * time.Minute},
	}
	for _, tc := range cases {
		if got := retryDelay(tc.failures, tc.retryAfter); got != tc.want {
			t.Errorf("retryDelay(%d, %s) = %s, want %s", tc.failures, tc.retryAfter, got, tc.want)
		}
	}
}

func TestBackoffSpacesCallsPerClaimAndCall(t *testing.T) {
	var b backoff
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if w := b.wait("a", callCreate, now); w != 0 {
		t.Fatalf("a call never failed waits %s", w)
	}
	throttled := &cloudprovider.ThrottledError{Call: callCreate, RetryAfter: 2 * time.Second}
	if d := b.failed("a", callCreate, now, throttled); d != 2*time.Second {
		t.Fatalf("throttled asking 2s: wait %s", d)
	}
	if d := b.failed("a", callCreate, now, errors.New("boom")); d != 2*launchBackoffMin {
		t.Fatalf("second failure: wait %s, want %s", d, 2*launchBackoffMin)
	}
	if w := b.wait("a", callCreate, now.Add(400*time.Millisecond)); w != 600*time.Millisecond {
		t.Errorf("400ms in: wait %s, want 600ms", w)
	}
	if w := b.wait("a", callDelete, now); w != 0 {
		t.Errorf("Delete waits %s for Create's failures", w)
	}
	if w := b.wait("b", callCreate, now); w != 0 {
		t.Errorf("another claim waits %s", w)
	}
	b.succeeded("a", callCreate)
	if d := b.failed("a", callCreate, now, errors.New("boom")); d != launchBackoffMin {
		t.Errorf("after a success the first failure waits %s, want %s", d, launchBackoffMin)
	}
	b.forget("a")
	if w := b.wait("a", callCreate, now); w != 0 {
		t.Errorf("a forgotten claim waits %s", w)
	}
}

// flaky fails the first failCreates Creates and failDeletes Deletes of the
// provider it wraps, throttled asking throttleFor (0: plain errors), and
// records when each call was made.
type flaky struct {
	cloudprovider.CloudProvider
	failCreates, failDeletes int
	throttleFor              time.Duration

	mu               sync.Mutex
	creates, deletes []time.Time
}

func (f *flaky) fail(call string, n, limit int) error {
	if n > limit {
		return nil
	}
	if f.throttleFor > 0 {
		return &cloudprovider.ThrottledError{Call: call, RetryAfter: f.throttleFor}
	}
	return errors.New(call + " failed on purpose")
}

func (f *flaky) Create(ctx context.Context, nc *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	f.mu.Lock()
	f.creates = append(f.creates, time.Now())
	err := f.fail("Create", len(f.creates), f.failCreates)
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return f.CloudProvider.Create(ctx, nc)
}

func (f *flaky) Delete(ctx context.Context, nc *karpv1.NodeClaim) error {
	f.mu.Lock()
	f.deletes = append(f.deletes, time.Now())
	err := f.fail("Delete", len(f.deletes), f.failDeletes)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.CloudProvider.Delete(ctx, nc)
}

// gaps are the times between consecutive calls.
func gaps(calls []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(calls); i++ {
		out = append(out, calls[i].Sub(calls[i-1]))
	}
	return out
}

// markTerminationReady says, as the termination controller would, that a
// deleted claim's node is drained and its volumes detached.
func markTerminationReady(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	testkube.Eventually(t, 30*time.Second, "NodeClaim "+name+" marked drained", func() (bool, error) {
		nc := &karpv1.NodeClaim{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, err
		}
		for _, c := range []string{ConditionTypeDrained, ConditionTypeVolumesDetached} {
			meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c})
		}
		err := cluster.Client.Status().Update(ctx, nc)
		return err == nil, err
	})
}

func claimGone(t *testing.T, name string) {
	t.Helper()
	testkube.Eventually(t, 60*time.Second, "NodeClaim "+name+" gone", func() (bool, error) {
		err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: name}, &karpv1.NodeClaim{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// TestThrottledLaunchWaitsTheRetryAfter: throttled Creates are retried no
// sooner than the throttling asked, though the claim's own status writes
// bring it back at once; the claim launches one instance.
func TestThrottledLaunchWaitsTheRetryAfter(t *testing.T) {
	const retryAfter = 1500 * time.Millisecond
	f := &flaky{failCreates: 2, throttleFor: retryAfter}
	runControllersWith(t, DefaultOptions(), func(cp cloudprovider.CloudProvider) cloudprovider.CloudProvider {
		f.CloudProvider = cp
		return f
	})
	createClass(t, "throttled", 0)
	np := createPool(t, "throttled", "throttled", "Never", 0)
	createClaim(t, np, "throttled-a")
	waitClaim(t, "throttled-a", "launched", func(nc *karpv1.NodeClaim) bool { return isTrue(nc, karpv1.ConditionTypeLaunched) })
	f.mu.Lock()
	creates := append([]time.Time(nil), f.creates...)
	f.mu.Unlock()
	if len(creates) != 3 {
		t.Errorf("%d Creates, want 3: two throttled, then the launch", len(creates))
	}
	for i, g := range gaps(creates) {
		if g < retryAfter-50*time.Millisecond {
			t.Errorf("Create %d came %s after a throttled one asking %s", i+2, g, retryAfter)
		}
	}
	node := &corev1.Node{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: "throttled-a"}, node); err != nil {
		t.Errorf("the claim's Node: %v", err)
	}
}

// TestFailedDeleteIsRetriedWithBackoff: a deleted claim whose instance the
// provider fails to delete keeps its finalizer, retries with growing waits,
// and goes once the instance does.
func TestFailedDeleteIsRetriedWithBackoff(t *testing.T) {
	f := &flaky{failDeletes: 3}
	runControllersWith(t, DefaultOptions(), func(cp cloudprovider.CloudProvider) cloudprovider.CloudProvider {
		f.CloudProvider = cp
		return f
	})
	createClass(t, "faildelete", 0)
	np := createPool(t, "faildelete", "faildelete", "Never", 0)
	nc := createClaim(t, np, "faildelete-a")
	waitClaim(t, nc.Name, "launched", func(nc *karpv1.NodeClaim) bool { return isTrue(nc, karpv1.ConditionTypeLaunched) })
	if err := cluster.Client.Delete(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	markTerminationReady(t, nc.Name)
	claimGone(t, nc.Name)
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: nc.Name}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("the claim's Node after the claim went: %v", err)
	}
	f.mu.Lock()
	deletes := append([]time.Time(nil), f.deletes...)
	f.mu.Unlock()
	if len(deletes) < 4 {
		t.Fatalf("%d Deletes, want at least 4: three failed, then the deletion", len(deletes))
	}
	for i, g := range gaps(deletes[:4]) {
		if want := retryDelay(i+1, 0); g < want-50*time.Millisecond {
			t.Errorf("Delete %d came %s after failure %d, want at least %s", i+2, g, i+1, want)
		}
	}
}

// TestLostLaunchResponseLaunchesOnce: with every launch failing after it
// created the instance, the retry finds that instance and the claim
// launches with it: one Node, no second instance.
func TestLostLaunchResponseLaunchesOnce(t *testing.T) {
	runControllers(t, DefaultOptions())
	class := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "lostlaunch"}, Spec: kwokv1alpha1.KWOKNodeClassSpec{
		Faults: &kwokv1alpha1.KWOKFaults{LaunchErrorPercent: ptrTo(int32(100)), LostResponsePercent: ptrTo(int32(100))}}}
	if err := cluster.Client.Create(context.Background(), class); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), class) })
	np := createPool(t, "lostlaunch", "lostlaunch", "Never", 0)
	createClaim(t, np, "lostlaunch-a")
	nc := waitClaim(t, "lostlaunch-a", "launched", func(nc *karpv1.NodeClaim) bool { return isTrue(nc, karpv1.ConditionTypeLaunched) })
	var nodes corev1.NodeList
	if err := cluster.Client.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, node := range nodes.Items {
		if node.Spec.ProviderID == nc.Status.ProviderID || node.Name == nc.Name {
			n++
			if node.Labels[corev1.LabelInstanceTypeStable] != nc.Labels[corev1.LabelInstanceTypeStable] {
				t.Errorf("Node %s is a %s, its claim says %s", node.Name, node.Labels[corev1.LabelInstanceTypeStable], nc.Labels[corev1.LabelInstanceTypeStable])
			}
		}
	}
	if n != 1 {
		t.Errorf("%d Nodes for the claim, want 1", n)
	}
	if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeLaunched); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Launched %+v", c)
	}
}

func ptrTo[T any](v T) *T { return &v }

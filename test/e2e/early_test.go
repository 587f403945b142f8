package e2e

import (
	"context"
	"fmt"
	"sort"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// TestEarlyLaunchesWhilePodsKeepComing: the controller restarted with
// --early-launch-interval=1s, and pods created one every 300 ms for 24 s,
// four to a c5.xlarge, on a NodePool of c5.xlarge only. Karpenter's
// batching (the default) would hold the batch open while they come and
// launch nothing until it closed 10 s after it opened. With early launches:
//   - NodeClaims are created within the first 10 s of the stream, before a
//     batch could have closed;
//   - while pods keep coming, only full NodeClaims launch: each made before
//     the last pod was created nominated four pods, never a part-filled
//     tail;
//   - every pod runs, on no more than a few NodeClaims over one per four
//     pods.
//
// Runs alone: it restarts the shared controller with other flags, and
// restarts it with the suite's own when it ends.
func TestEarlyLaunchesWhilePodsKeepComing(t *testing.T) {
	const pool, ns = "early", "e2e-early"
	const pods, every, perNode = 80, 300 * time.Millisecond, 4
	withControllerFlags(t, "--early-launch-interval=1s")
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.xlarge"))
	})
	namespace(t, ns)
	t.Cleanup(func() { cleanupPods(t, pool, ns) })
	rec := recordClaims(pool)

	// Four pods take 93% of the node's CPU, over --early-launch-fill's 0.9,
	// with room left for a small DaemonSet; a fifth does not fit.
	alloc := allocatableOf(t, "c5.xlarge")
	cpu := resource.NewMilliQuantity(alloc.Cpu().MilliValue()*93/100/perNode, resource.DecimalSI)
	created := map[types.UID]time.Time{}
	var first, last time.Time
	start := time.Now()
	for i := 0; i < pods; i++ {
		// Pacing the stream, not waiting for a condition.
		time.Sleep(time.Until(start.Add(time.Duration(i) * every)))
		p := streamPod(ns, fmt.Sprintf("pod-%02d", i), pool, *cpu)
		if err := kc.Create(context.Background(), p); err != nil {
			t.Fatalf("creating pod %d: %v", i, err)
		}
		created[p.UID] = p.CreationTimestamp.Time
		if i == 0 {
			first = p.CreationTimestamp.Time
		}
		last = p.CreationTimestamp.Time
	}
	t.Logf("%d pods of %s CPU created in %s, the first at %s, the last at %s (API server clock, to the second)",
		pods, cpu, time.Since(start).Round(time.Millisecond), first.Format(time.TimeOnly), last.Format(time.TimeOnly))
	waitRunning(t, ns, pods, 4*time.Minute)

	seen := rec.Seen()
	claims := rec.Last()
	sort.Slice(seen, func(i, j int) bool {
		return claims[seen[i]].CreationTimestamp.Time.Before(claims[seen[j]].CreationTimestamp.Time)
	})
	// Creation times are whole seconds; a claim created at or after first
	// plus 10 s truncates to no earlier than that, so one before it was
	// created while the first batch could not yet have closed.
	inFirstBatch, during := 0, 0
	var waits []time.Duration
	for _, name := range seen {
		c := claims[name]
		at := c.CreationTimestamp.Time
		uids := snapshot.Nominations(rec.first[name])
		t.Logf("NodeClaim %s created +%s after the first pod, nominating %d pods", name, at.Sub(first), len(uids))
		if at.Before(first.Add(10 * time.Second)) {
			inFirstBatch++
		}
		for _, u := range uids {
			if born, ok := created[u]; ok {
				waits = append(waits, at.Sub(born))
			}
		}
		if !at.Before(last) {
			continue // the stream's tail, launched when the batch closed
		}
		during++
		if len(uids) != perNode {
			t.Errorf("NodeClaim %s was created +%s after the first pod, while pods kept coming, nominating %d pods; only full NodeClaims (%d pods) launch then",
				name, at.Sub(first), len(uids), perNode)
		}
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	t.Logf("%d NodeClaims in all, %d created while pods kept coming, %d within the first 10 s; a pod's creation to its NodeClaim's, p50 %s, max %s (to the second)",
		len(seen), during, inFirstBatch, percentile(waits, 50), percentile(waits, 100))
	if inFirstBatch == 0 {
		t.Errorf("no NodeClaim was created within 10 s of the first pod: with early launches, full NodeClaims launch while the batch is open%s", describeClaims(pool))
	}
	if during == 0 {
		t.Errorf("no NodeClaim was created before the last pod: early launches launched nothing while pods kept coming")
	}
	if len(seen) > pods/perNode+5 {
		t.Errorf("%d NodeClaims for %d pods, %d to a node: want at most %d%s", len(seen), pods, perNode, pods/perNode+5, describeClaims(pool))
	}
}

// withControllerFlags restarts the shared controller with flags added to the
// suite's, and restarts it with the suite's own when the test ends.
func withControllerFlags(t *testing.T, flags ...string) {
	t.Helper()
	suite := env.ControllerArgs
	restart := func(args []string) {
		if err := env.KillController(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		env.ControllerArgs = args
		if err := env.StartController(); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "the restarted controller to lead", func() (bool, error) { return controllerLeads(t), nil })
	}
	restart(append(append([]string(nil), suite...), flags...))
	t.Cleanup(func() { restart(suite) })
}

// allocatableOf is an instance type's allocatable in the built-in catalog.
func allocatableOf(t *testing.T, name string) corev1.ResourceList {
	t.Helper()
	for _, it := range builtinTypes {
		if it.Name == name {
			return it.Allocatable()
		}
	}
	t.Fatalf("instance type %s is not in the built-in catalog", name)
	return nil
}

// streamPod is a bare pod for pool's nodes.
func streamPod(ns, name, pool string, cpu resource.Quantity) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "stream"}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: pool},
			TerminationGracePeriodSeconds: ptr(int64(0)),
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: resource.MustParse("128Mi")}}}},
		},
	}
}

// cleanupPods deletes a namespace's pods and the NodePool, and waits for its
// nodes to go, so that the tests after this one run on a quiet cluster.
func cleanupPods(t *testing.T, pool, ns string) {
	ctx := context.Background()
	_ = kc.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
	cleanupWorkload(t, pool, ns)
}

// percentile is the p-th percentile of sorted durations; 0 for none.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

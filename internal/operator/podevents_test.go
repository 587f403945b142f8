package operator

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
)

// TestPodEventsWrittenWhereTheyDecide: a pod binding to a node is written
// to its claim's status.lastPodEventTime where the NodePool's
// consolidateAfter is a positive duration, and not where it is 0s (the time
// decides nothing there); once that NodePool's consolidateAfter turns
// positive, its claim gets the time the pod came, not the time of the
// change.
func TestPodEventsWrittenWhereTheyDecide(t *testing.T) {
	const waits, atOnce = "events-wait", "events-at-once"
	for pool, after := range map[string]string{waits: "1h", atOnce: "0s"} {
		setup(t, pool, func(np *karpv1.NodePool) {
			np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
			np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration(after)
			// No disruption: only the pod events are under test.
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
		})
		readyInstance(t, pool, pool+"-a")
	}
	stop := startController(t, nil)
	defer stop()
	ctx := context.Background()
	claim := func(name string) (*karpv1.NodeClaim, error) {
		nc := &karpv1.NodeClaim{}
		return nc, cluster.Client.Get(ctx, client.ObjectKey{Name: name}, nc)
	}
	eventually(t, 30*time.Second, "both claims initialized", func() (bool, error) {
		for _, name := range []string{waits + "-a", atOnce + "-a"} {
			nc, err := claim(name)
			if err != nil || !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
				return false, fmt.Errorf("%s not initialized (%v)", name, err)
			}
		}
		return true, nil
	})
	// Two more disruption loops: the loop knows both nodes' pods (none) by
	// then, so a pod that comes is an event.
	loops := disruptionLoops(t)
	eventually(t, 30*time.Second, "two disruption loops", func() (bool, error) {
		n := disruptionLoops(t)
		return n >= loops+2, fmt.Errorf("%v loops since", n-loops)
	})
	// The 0s NodePool's pod first: a loop that sees the other has seen it.
	boundPod(t, atOnce, atOnce+"-pod", atOnce+"-a", false)
	boundPod(t, waits, waits+"-pod", waits+"-a", false)
	var stamped time.Time
	eventually(t, 30*time.Second, "the pod event written on the claim of the NodePool that waits", func() (bool, error) {
		nc, err := claim(waits + "-a")
		if err != nil {
			return false, err
		}
		stamped = nc.Status.LastPodEventTime.Time
		return !stamped.IsZero(), fmt.Errorf("lastPodEventTime not set")
	})
	if nc, err := claim(atOnce + "-a"); err != nil {
		t.Fatal(err)
	} else if !nc.Status.LastPodEventTime.IsZero() {
		t.Errorf("claim of the NodePool with consolidateAfter 0s got lastPodEventTime %s; want none written", nc.Status.LastPodEventTime)
	}

	// Let the clock pass the second of that event (the API keeps whole
	// seconds), so the time of the change below differs from it.
	eventually(t, 10*time.Second, "the clock a second past the event", func() (bool, error) {
		return time.Now().Truncate(time.Second).After(stamped), nil
	})
	np := &karpv1.NodePool{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: atOnce}, np); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("1h")
	if err := cluster.Client.Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the remembered pod event written once consolidateAfter is 1h", func() (bool, error) {
		nc, err := claim(atOnce + "-a")
		if err != nil {
			return false, err
		}
		return !nc.Status.LastPodEventTime.IsZero(), fmt.Errorf("lastPodEventTime not set")
	})
	nc, err := claim(atOnce + "-a")
	if err != nil {
		t.Fatal(err)
	}
	if got := nc.Status.LastPodEventTime.Time; got.After(stamped) || !got.Before(changed.Truncate(time.Second)) {
		t.Errorf("lastPodEventTime %s: want the time the pod came (by %s, before the change at %s)", got, stamped, changed)
	}
}

// readyInstance makes a launched claim of pool with a Ready node, as the
// controller would find it after a launch.
func readyInstance(t *testing.T, pool, name string) {
	t.Helper()
	ctx := context.Background()
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: pool}, Finalizers: []string{karpv1.TerminationFinalizer}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.SchemeGroupVersion.Group, Kind: "KWOKNodeClass", Name: pool},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool}}},
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large"}}},
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}},
			},
			Resources: karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		},
	}
	if err := cluster.Client.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	provider, err := kwok.New(cluster.Client, kwok.ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Create(ctx, claim); err != nil {
		t.Fatalf("launching the instance: %v", err)
	}
	setNodeReady(t, name)
}

// disruptionLoops counts the disruption loops run in this process (the
// planner's decision histogram gets one observation a loop).
func disruptionLoops(t *testing.T) uint64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() == "karpenter_voluntary_disruption_decision_evaluation_duration_seconds" {
			for _, m := range f.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

// TestPodEventsStampedAsTheyHappen: with the disruption loop 10 s apart, a
// pod coming to a node and, a loop later, leaving it are written to the
// claim's lastPodEventTime before the next loop, with the time of the event
// (the pod watch), not a loop later. Before, the stamp waited for the loop,
// and explain counted consolidateAfter from the pod that came before.
func TestPodEventsStampedAsTheyHappen(t *testing.T) {
	const pool = "events-prompt"
	setup(t, pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("1h")
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
	})
	readyInstance(t, pool, pool+"-a")
	const interval = 10 * time.Second
	stop := startController(t, func(o *Options) { o.Disruption.Interval = interval })
	defer stop()
	ctx := context.Background()
	claim := func() (*karpv1.NodeClaim, error) {
		nc := &karpv1.NodeClaim{}
		return nc, cluster.Client.Get(ctx, client.ObjectKey{Name: pool + "-a"}, nc)
	}
	loops := disruptionLoops(t)
	eventually(t, 3*interval, "a disruption loop that knows the claim's node", func() (bool, error) {
		nc, err := claim()
		if err != nil || !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
			return false, fmt.Errorf("not initialized (%v)", err)
		}
		n := disruptionLoops(t)
		return n > loops, fmt.Errorf("%d loops since", n-loops)
	})
	// stampedBeforeTheNextLoop waits for lastPodEventTime to reach the
	// second of the event at `at`, and fails if a loop ran first.
	stampedBeforeTheNextLoop := func(what string, at time.Time) time.Time {
		t.Helper()
		loops := disruptionLoops(t)
		var got time.Time
		eventually(t, interval, what+" stamped", func() (bool, error) {
			nc, err := claim()
			if err != nil {
				return false, err
			}
			got = nc.Status.LastPodEventTime.Time
			return !got.Before(at.Truncate(time.Second)), fmt.Errorf("lastPodEventTime %s, want %s or later", got, at.Truncate(time.Second))
		})
		if n := disruptionLoops(t); n != loops {
			t.Errorf("%s: a disruption loop ran before the stamp (%d loops); the stamp must come from the pod watch", what, n-loops)
		}
		if got.After(at.Add(2 * time.Second)) {
			t.Errorf("%s: lastPodEventTime %s; want the event's time, %s", what, got, at)
		}
		return got
	}
	// Right after a loop, so that the next is a whole interval away.
	loops = disruptionLoops(t)
	eventually(t, 2*interval, "the next loop", func() (bool, error) {
		return disruptionLoops(t) > loops, nil
	})
	came := time.Now()
	boundPod(t, pool, pool+"-pod", pool+"-a", false)
	stamped := stampedBeforeTheNextLoop("the pod coming", came)

	// A loop later (the watch writes a stamp a loop old or older), right
	// after a loop, the pod leaves.
	loops = disruptionLoops(t)
	eventually(t, 3*interval, "a loop after the stamp", func() (bool, error) {
		return disruptionLoops(t) > loops && time.Since(stamped) > interval+time.Second, nil
	})
	loops = disruptionLoops(t)
	eventually(t, 2*interval, "the next loop", func() (bool, error) {
		return disruptionLoops(t) > loops, nil
	})
	left := time.Now()
	if err := cluster.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: pool + "-pod"}}); err != nil {
		t.Fatal(err)
	}
	stampedBeforeTheNextLoop("the pod leaving", left)
}

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
)

// Test 1: 300 pending pods of mixed shapes all end up Running, bound by
// kube-scheduler on nodes nodewright launched; `simulate`, given the same
// NodePool and Deployments, counts the same nodes minute by minute, within
// a node or 10%, give or take 30 s (compareFidelity).
func TestMixedShapesAllRun(t *testing.T) {
	t.Parallel()
	const pool, ns = "mixed", "e2e-mixed"
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64", "arm64"))
	})
	namespace(t, ns)
	sel := map[string]string{karpv1.NodePoolLabelKey: pool}
	start, stop := time.Now(), sampleNodes(pool)
	defer stop()
	spread := func(key, app string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
		}
	}
	deployment(t, ns, "zone-spread", 120, sel, podShape{cpu: "250m", memory: "256Mi", mutate: spread(corev1.LabelTopologyZone, "zone-spread")})
	deployment(t, ns, "host-spread", 60, sel, podShape{cpu: "250m", memory: "256Mi", mutate: spread(corev1.LabelHostname, "host-spread")})
	deployment(t, ns, "anti-affinity", 20, sel, podShape{cpu: "500m", memory: "512Mi", mutate: func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anti-affinity"}}}}}}
	}})
	deployment(t, ns, "gpu", 20, sel, podShape{cpu: "1", memory: "2Gi", extra: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}})
	deployment(t, ns, "arm", 80, map[string]string{karpv1.NodePoolLabelKey: pool, corev1.LabelArchStable: "arm64"}, podShape{cpu: "500m", memory: "1Gi"})

	waitRunning(t, ns, 300, 8*time.Minute)
	cs, err := claimsOf(pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("300 pods Running on %d NodeClaims", len(cs))
	// The same Deployments simulated: the fidelity of simulate
	// (docs/simulate.md), over three minutes at least (the sample at 3:00
	// included) and a minute past the last pod's start.
	time.Sleep(max(time.Minute, time.Until(start.Add(3*time.Minute+10*time.Second))))
	mixedFidelity(t, pool, ns, []string{"zone-spread", "host-spread", "anti-affinity", "gpu", "arm"}, stop())
}

// Test 5: the cheapest offering is out of capacity; the same launch falls
// back to the next offering, so one NodeClaim is made and none fails.
func TestInsufficientCapacityFallsBackInOneLaunch(t *testing.T) {
	t.Parallel()
	const pool, ns = "ice", "e2e-ice"
	nodeClass(t, pool, &kwokv1alpha1.KWOKFaults{InsufficientCapacity: []kwokv1alpha1.KWOKOfferingSelector{
		{InstanceType: "c5.large", Zone: "zone-a", CapacityType: "on-demand"}}})
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large", "c5.xlarge"),
			req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a"))
	})
	namespace(t, ns)
	rec := recordClaims(pool)
	deployment(t, ns, "app", 1, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "500m", memory: "512Mi"})
	waitRunning(t, ns, 1, 3*time.Minute)
	seen := rec.Seen()
	if len(seen) != 1 {
		t.Fatalf("want exactly one NodeClaim (fallback within one launch), saw %v:%s", seen, describeClaims(pool))
	}
	cs, err := claimsOf(pool)
	if err != nil || len(cs) != 1 {
		t.Fatalf("claims: %v %v", cs, err)
	}
	if got := cs[0].Labels[corev1.LabelInstanceTypeStable]; got != "c5.xlarge" {
		t.Fatalf("launched %s; want c5.xlarge, the next offering after c5.large ran out", got)
	}
}

// Test 6a: a NodePool's cpu limit caps what it launches; pods beyond it stay
// pending with the reason.
func TestNodePoolLimitRespected(t *testing.T) {
	t.Parallel()
	const pool, ns = "limited", "e2e-limited"
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.xlarge"))
		np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("4")}
	})
	namespace(t, ns)
	rec := recordClaims(pool)
	deployment(t, ns, "app", 6, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "1", memory: "1Gi"})
	// c5.xlarge has 4 vCPU: one fits the limit and holds 3 of the 1-vCPU pods.
	eventually(t, 3*time.Minute, "3 pods Running", func() (bool, error) {
		running, _, err := podCounts(ns)
		return err == nil && running == 3, fmt.Errorf("%d running", running)
	})
	eventually(t, time.Minute, "a FailedScheduling event naming the limit", func() (bool, error) {
		var evs corev1.EventList
		if err := kc.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" && e.Source.Component == "nodewright" && strings.Contains(e.Message, "limit") {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events, none from nodewright about the limit", len(evs.Items))
	})
	if seen := rec.Seen(); len(seen) != 1 {
		t.Fatalf("the 4-cpu limit allows one c5.xlarge; saw claims %v:%s", seen, describeClaims(pool))
	}
}

// Test 6b and 6c: the heavier NodePool is used first; a NodePool whose
// NodeClass is missing and one whose requirements no instance type meets
// do not stop the others.
func TestWeightsAndBadNodePools(t *testing.T) {
	t.Parallel()
	const ns = "e2e-weights"
	namespace(t, ns)
	labelled := func(group string, weight int32, mutate func(*karpv1.NodePool)) func(*karpv1.NodePool) {
		return func(np *karpv1.NodePool) {
			np.Spec.Weight = &weight
			np.Spec.Template.Labels = map[string]string{"e2e-group": group}
			if mutate != nil {
				mutate(np)
			}
		}
	}
	nodeClass(t, "weights", nil)
	nodePool(t, "heavy", "weights", labelled("weights", 50, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, req("nodewright.dev/instance-family", corev1.NodeSelectorOpIn, "m5"))
	}))
	nodePool(t, "light", "weights", labelled("weights", 10, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, req("nodewright.dev/instance-family", corev1.NodeSelectorOpIn, "c5"))
	}))
	nodePool(t, "broken", "no-such-class", labelled("bad", 100, nil))
	nodePool(t, "impossible", "weights", labelled("bad", 90, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "no-such-type"))
	}))
	nodePool(t, "good", "weights", labelled("bad", 1, nil))

	deployment(t, ns, "weighted", 4, map[string]string{"e2e-group": "weights"}, podShape{cpu: "500m", memory: "512Mi"})
	deployment(t, ns, "survivor", 4, map[string]string{"e2e-group": "bad"}, podShape{cpu: "500m", memory: "512Mi"})
	waitRunning(t, ns, 8, 3*time.Minute)
	for pool, want := range map[string]bool{"heavy": true, "light": false, "broken": false, "impossible": false, "good": true} {
		cs, err := claimsOf(pool)
		if err != nil {
			t.Fatal(err)
		}
		if (len(cs) > 0) != want {
			t.Errorf("NodePool %s has %d NodeClaims; want some: %v", pool, len(cs), want)
		}
	}
}

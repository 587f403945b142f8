package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/snapshot"
)

const ciliumTaint = "node.cilium.io/agent-not-ready"

// Test 2: the kubelet restarts while the node initializes: NotReady for 60 s
// from 30 s after registration. The pods wait on the node's startup taint
// meanwhile (an agent lifts it at 100 s), so they are pending through the
// whole NotReady window, as in the report of Karpenter launching a second
// node. No extra NodeClaim may be made.
func TestKubeletRestartDuringInitializationLaunchesNothingExtra(t *testing.T) {
	t.Parallel()
	const pool, ns = "restart", "e2e-restart"
	booting := corev1.Taint{Key: "example.com/booting", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	nodeClass(t, pool, &kwokv1alpha1.KWOKFaults{
		NotReady:    &kwokv1alpha1.KWOKNotReadyFault{After: metav1.Duration{Duration: 30 * time.Second}, For: metav1.Duration{Duration: 60 * time.Second}},
		AgentTaints: []kwokv1alpha1.KWOKAgentTaint{{Key: booting.Key, Value: booting.Value, Effect: booting.Effect, RemoveAfter: &metav1.Duration{Duration: 100 * time.Second}}},
	})
	nodePool(t, pool, pool, func(np *karpv1.NodePool) { np.Spec.Template.Spec.StartupTaints = []corev1.Taint{booting} })
	namespace(t, ns)
	rec := recordClaims(pool)
	deployment(t, ns, "app", 10, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "500m", memory: "512Mi"})

	var first []string
	eventually(t, 2*time.Minute, "the first NodeClaims to register", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil || len(cs) == 0 {
			return false, err
		}
		first = nil
		for _, c := range cs {
			if c.Status.NodeName == "" {
				return false, fmt.Errorf("%s not registered", c.Name)
			}
			first = append(first, c.Name)
		}
		return true, nil
	})
	sawNotReady := false
	eventually(t, 4*time.Minute, "all pods Running after the restart and the startup taint", func() (bool, error) {
		nodes, err := nodesOf(pool)
		if err != nil {
			return false, err
		}
		for _, n := range nodes {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
					sawNotReady = true
				}
			}
		}
		running, other, err := podCounts(ns)
		return err == nil && running == 10 && other == 0, fmt.Errorf("%d running, %d not", running, other)
	})
	if !sawNotReady {
		t.Fatal("no node was ever seen NotReady: the fault did not happen, so the test proves nothing")
	}
	seen := rec.Seen()
	if len(seen) != len(first) {
		t.Fatalf("NodeClaims before the restart %v, ever seen %v: extra NodeClaims were launched:%s", first, seen, describeClaims(pool))
	}
}

// Test 3: a CNI agent's startup taint, lifted after 20 s. Declared in the
// NodePool it is a startup taint; undeclared, nodewright records it at
// registration and treats it the same way (docs/provisioning.md). Either way
// no extra NodeClaim is launched while it is on.
func TestAgentStartupTaintLaunchesNothingExtra(t *testing.T) {
	t.Parallel()
	for _, declared := range []bool{true, false} {
		name := map[bool]string{true: "declared", false: "undeclared"}[declared]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool, ns := "cni-"+name, "e2e-cni-"+name
			taint := corev1.Taint{Key: ciliumTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}
			nodeClass(t, pool, &kwokv1alpha1.KWOKFaults{AgentTaints: []kwokv1alpha1.KWOKAgentTaint{
				{Key: taint.Key, Value: taint.Value, Effect: taint.Effect, RemoveAfter: &metav1.Duration{Duration: 20 * time.Second}}}})
			nodePool(t, pool, pool, func(np *karpv1.NodePool) {
				if declared {
					np.Spec.Template.Spec.StartupTaints = []corev1.Taint{taint}
				}
			})
			namespace(t, ns)
			rec := recordClaims(pool)
			deployment(t, ns, "app", 6, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "500m", memory: "512Mi"})
			var first int
			eventually(t, 2*time.Minute, "NodeClaims registered", func() (bool, error) {
				cs, err := claimsOf(pool)
				if err != nil || len(cs) == 0 {
					return false, err
				}
				for _, c := range cs {
					if c.Status.NodeName == "" {
						return false, nil
					}
				}
				first = len(cs)
				return true, nil
			})
			waitRunning(t, ns, 6, 3*time.Minute)
			if seen := rec.Seen(); len(seen) != first {
				t.Fatalf("%d NodeClaims registered first, %d seen in all: extra launched:%s", first, len(seen), describeClaims(pool))
			}
			// kube-scheduler binds the pods the moment the taint goes; the
			// controller marks the claim Initialized on its next look at the
			// node, so that is waited for, not assumed.
			var cs []karpv1.NodeClaim
			eventually(t, 30*time.Second, "NodeClaims initialized after the taint went", func() (bool, error) {
				var err error
				if cs, err = claimsOf(pool); err != nil {
					return false, err
				}
				for _, c := range cs {
					if !metaTrue(c, karpv1.ConditionTypeInitialized) {
						return false, fmt.Errorf("NodeClaim %s not initialized", c.Name)
					}
				}
				return true, nil
			})
			for _, c := range cs {
				recorded := c.Annotations[snapshot.RegistrationTaintsAnnotation]
				if declared == strings.Contains(recorded, ciliumTaint) {
					t.Errorf("NodeClaim %s: registration taints %q; the undeclared taint (only) should be recorded", c.Name, recorded)
				}
			}
		})
	}
}

func metaTrue(c karpv1.NodeClaim, typ string) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == typ {
			return cond.Status == metav1.ConditionTrue
		}
	}
	return false
}

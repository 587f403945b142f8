package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
)

// TestInterruption runs two pods that cannot share a node on spot nodes of
// a kwok NodePool, then interrupts one node through the kwok fault (a spot
// interruption warning) and later the other (scheduled maintenance). Each
// time the interruption controller, the one AWS's queue feeds, must replace
// the node before it goes: a NodeClaim made after the notice is initialized
// before the interrupted node is gone, and the node goes well before its
// notice runs out (so the controller acted, not the provider's
// termination). Every pod ends Running. After the spot interruption the
// replacement avoids the interrupted offering, as the AWS path marks it
// unavailable; without that mark it would land on the same cheapest one. A
// request of an unknown kind is refused with an event naming the annotation.
func TestInterruption(t *testing.T) {
	t.Parallel()
	const pool, ns = "interruption", "e2e-interruption"
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot)}
	})
	namespace(t, ns)
	deployment(t, ns, "app", 2, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "500m", memory: "256Mi", mutate: func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}}}}}}
	}})
	waitRunning(t, ns, 2, 3*time.Minute)
	var originals []karpv1.NodeClaim
	eventually(t, time.Minute, "two registered NodeClaims", func() (bool, error) {
		cs, err := claimsOf(pool)
		originals = nil
		for _, c := range cs {
			if c.Status.NodeName != "" && c.DeletionTimestamp == nil {
				originals = append(originals, c)
			}
		}
		return err == nil && len(originals) == 2, fmt.Errorf("%d registered (err %v):%s", len(originals), err, describeClaims(pool))
	})

	spot := originals[0]
	replacement := interruptAndWait(t, pool, ns, 2, spot, "spot", "", 2*time.Minute)
	if offeringOf(replacement) == offeringOf(spot) {
		t.Errorf("replacement %s launched on %s, the offering just interrupted; it should be unavailable", replacement.Name, offeringOf(spot))
	}
	waitRunning(t, ns, 2, 3*time.Minute)

	interruptAndWait(t, pool, ns, 2, originals[1], "maintenance", "10m", 10*time.Minute)
	waitRunning(t, ns, 2, 3*time.Minute)

	// An unknown kind: a Warning event names the annotation, and the node
	// stays.
	cs, err := claimsOf(pool)
	if err != nil || len(cs) == 0 {
		t.Fatalf("no NodeClaim left (err %v)", err)
	}
	target := cs[0].Status.NodeName
	annotateNode(t, target, map[string]string{kwok.InterruptAnnotation: "reboot"})
	eventually(t, time.Minute, "a "+kwok.InterruptionInvalidReason+" event on "+target, func() (bool, error) {
		var evs corev1.EventList
		if err := kc.List(context.Background(), &evs); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == target && e.Reason == kwok.InterruptionInvalidReason {
				if !strings.Contains(e.Message, kwok.InterruptAnnotation) || e.Type != corev1.EventTypeWarning {
					return false, fmt.Errorf("%s event %q does not name %s", e.Type, e.Message, kwok.InterruptAnnotation)
				}
				return true, nil
			}
		}
		return false, fmt.Errorf("no such event")
	})
	var nc karpv1.NodeClaim
	if err := kc.Get(context.Background(), client.ObjectKey{Name: cs[0].Name}, &nc); err != nil || nc.DeletionTimestamp != nil {
		t.Errorf("NodeClaim %s of a refused interruption is going (err %v)", cs[0].Name, err)
	}
	waitRunning(t, ns, 2, time.Minute)
}

func offeringOf(c karpv1.NodeClaim) string {
	return c.Labels[corev1.LabelInstanceTypeStable] + "/" + c.Labels[corev1.LabelTopologyZone] + "/" + c.Labels[karpv1.CapacityTypeLabelKey]
}

func annotateNode(t *testing.T, name string, ann map[string]string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		t.Fatal(err)
	}
	if err := kc.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatalf("annotating Node %s: %v", name, err)
	}
}

// interruptAndWait asks the kwok provider to interrupt victim's node (kind,
// with window unless empty), whose notice lasts noticeFor, and waits for the
// node to go, while pods pods of ns run. It fails unless the node's pod
// kept running until a NodeClaim made after the notice was initialized, and
// the node went before the notice ran out; it returns that replacement.
func interruptAndWait(t *testing.T, pool, ns string, pods int, victim karpv1.NodeClaim, kind, window string, noticeFor time.Duration) karpv1.NodeClaim {
	t.Helper()
	before := map[string]bool{}
	cs, err := claimsOf(pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		before[c.Name] = true
	}
	node := victim.Status.NodeName
	ann := map[string]string{kwok.InterruptAnnotation: kind}
	if window != "" {
		ann[kwok.InterruptWindowAnnotation] = window
	}
	asked := time.Now()
	annotateNode(t, node, ann)

	var replacement *karpv1.NodeClaim
	noticed, early := false, ""
	eventually(t, noticeFor+time.Minute, "interrupted node "+node+" to go", func() (bool, error) {
		// Pods first, claims second: a pod missing before any replacement
		// was initialized is then proof that the drain did not wait.
		running, _, err := podCounts(ns)
		if err != nil {
			return false, err
		}
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		for i := range cs {
			if c := cs[i]; replacement == nil && !before[c.Name] && meta.IsStatusConditionTrue(c.Status.Conditions, karpv1.ConditionTypeInitialized) {
				replacement = &c
			}
		}
		if replacement == nil && running < pods && early == "" {
			early = fmt.Sprintf("%d of %d pods Running %v after the request, and no replacement initialized:%s",
				running, pods, time.Since(asked).Round(time.Millisecond), describeClaims(pool))
		}
		var n corev1.Node
		err = kc.Get(context.Background(), client.ObjectKey{Name: node}, &n)
		if client.IgnoreNotFound(err) != nil {
			return false, err
		}
		if err != nil {
			return true, nil
		}
		_, has := n.Annotations[kwok.InterruptionAnnotation]
		noticed = noticed || has
		return false, fmt.Errorf("node %s still there (noticed %v, deleting %v); claims:%s", node, noticed, n.DeletionTimestamp != nil, describeClaims(pool))
	})
	wentAfter := time.Since(asked)
	if !noticed {
		t.Errorf("%s: node %s never carried the %s notice", kind, node, kwok.InterruptionAnnotation)
	}
	if early != "" {
		t.Errorf("%s: node %s was drained before its replacement was up: %s", kind, node, early)
	}
	if wentAfter >= noticeFor {
		t.Errorf("%s: node %s went %v after the request, when its notice of %v ran out: the provider terminated it, the controller did not replace it",
			kind, node, wentAfter.Round(time.Second), noticeFor)
	}
	if replacement == nil {
		t.Fatalf("%s: node %s went before any replacement NodeClaim initialized; claims:%s", kind, node, describeClaims(pool))
	}
	t.Logf("%s: node %s on %s went %v after the request; replacement %s on %s initialized first", kind, node, offeringOf(victim),
		wentAfter.Round(time.Second), replacement.Name, offeringOf(*replacement))
	return *replacement
}

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/controller/disruption"
)

// TestDoNotDisruptNodeAndDuration: karpenter.sh/do-not-disrupt on a node
// keeps it, empty, from consolidation; on a pod with a duration it holds
// the pod's node only for that long after the pod started.
func TestDoNotDisruptNodeAndDuration(t *testing.T) {
	t.Parallel()
	const pool, ns = "dnd", "e2e-dnd"
	const hold = 45 * time.Second
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		consolidating(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized)(np)
		upTo8CPUs(np)
	})
	namespace(t, ns)
	sel := map[string]string{karpv1.NodePoolLabelKey: pool}
	ctx := context.Background()
	// Two nodes: one big pod each.
	deployment(t, ns, "big", 2, sel, podShape{cpu: "5", memory: "1Gi"})
	waitRunning(t, ns, 2, 4*time.Minute)
	nodes, err := nodesOf(pool)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("want 2 nodes, have %d (%v)", len(nodes), err)
	}
	kept := nodes[0]
	before := kept.DeepCopy()
	kept.Annotations[karpv1.DoNotDisruptAnnotationKey] = "true"
	if err := kc.Patch(ctx, &kept, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	// A small pod protected for a while, on the other node: the big pods
	// still fill the annotated node when it is created.
	deployment(t, ns, "short", 1, sel, podShape{cpu: "500m", memory: "256Mi",
		annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: hold.String()}, mutate: func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{kept.Name}}}}}}}}
		}})
	waitRunning(t, ns, 3, 2*time.Minute)
	var short corev1.Pod
	if err := firstPod(ns, "short", &short); err != nil {
		t.Fatal(err)
	}
	started := short.Status.StartTime.Time
	scale(t, ns, "big", 0)
	// The annotated node, now empty, says why it is kept.
	eventually(t, 2*time.Minute, "the annotated empty node to be kept and say why", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		for _, c := range cs {
			cond := meta.FindStatusCondition(c.Status.Conditions, disruption.PreviewCondition)
			if c.Status.NodeName == kept.Name && cond != nil && strings.Contains(cond.Message, "do-not-disrupt") {
				return true, nil
			}
		}
		return false, errorf("no preview on %s names do-not-disrupt: %s", kept.Name, describeClaims(pool))
	})
	other := short.Spec.NodeName
	var gone time.Time
	eventually(t, 3*time.Minute, "the short-protected pod's node to be consolidated once the protection lapses", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		for _, c := range cs {
			if c.Status.NodeName == other && c.DeletionTimestamp == nil {
				return false, errorf("%s still there", other)
			}
			if c.Status.NodeName == other && gone.IsZero() {
				gone = c.DeletionTimestamp.Time
			}
		}
		if gone.IsZero() {
			gone = time.Now()
		}
		return true, nil
	})
	// Timestamps have a second's resolution.
	if early := gone.Sub(started); early < hold-time.Second {
		t.Errorf("node %s went %s after its pod started, before the pod's %s do-not-disrupt ended", other, early.Round(time.Second), hold)
	}
	var n corev1.Node
	if err := kc.Get(ctx, client.ObjectKey{Name: kept.Name}, &n); err != nil || n.DeletionTimestamp != nil {
		t.Errorf("the do-not-disrupt node %s was disrupted (err %v)", kept.Name, err)
	}
}

// firstPod finds a running pod of a Deployment (its pods carry app=name).
func firstPod(ns, app string, into *corev1.Pod) error {
	var pods corev1.PodList
	if err := kc.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		return err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Status.StartTime != nil {
			*into = p
			return nil
		}
	}
	return errorf("no running pod of %s/%s", ns, app)
}

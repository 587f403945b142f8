package disruption

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/budget"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/testcluster"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

// TestRateStartsSurviveARestart: the disruption starts a rate budget counts
// are recorded on the NodePool, so a new controller (a restart, another
// leader) counts them though their nodes are gone; the record goes when the
// rate does.
func TestRateStartsSurviveARestart(t *testing.T) {
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "rated", Annotations: map[string]string{budget.DisruptionRateAnnotation: "2/1h"}},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "nodewright.dev", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: "kubernetes.io/os", Operator: "In", Values: []string{"linux"}}}},
		}}},
	}
	if err := cluster.Client.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(ctx, np) })
	read := func() *snapshot.Cluster {
		t.Helper()
		var pools karpv1.NodePoolList
		if err := cluster.Client.List(ctx, &pools); err != nil {
			t.Fatal(err)
		}
		out := &snapshot.Cluster{}
		for i := range pools.Items {
			out.NodePools = append(out.NodePools, &pools.Items[i])
		}
		return out
	}
	annotation := func() (string, bool) {
		t.Helper()
		got := &karpv1.NodePool{}
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
			t.Fatal(err)
		}
		v, ok := got.Annotations[budget.StartsAnnotation]
		return v, ok
	}

	first := &Controller{Client: cluster.Client}
	first.noteStart("rated", now.Add(-2*time.Hour)) // outside the window: not recorded
	first.noteStart("rated", now.Add(-10*time.Minute))
	first.recentStarts(read(), now)
	first.persistStarts(ctx, read(), now)
	want := budget.EncodeStarts([]time.Time{now.Add(-10 * time.Minute)})
	if v, _ := annotation(); v != want {
		t.Fatalf("recorded starts %q, want %q", v, want)
	}

	restarted := &Controller{Client: cluster.Client}
	got := restarted.recentStarts(read(), now)["rated"]
	if len(got) != 1 || !got[0].Equal(now.Add(-10*time.Minute)) {
		t.Fatalf("a new controller counts starts %v, want the one 10 minutes ago", got)
	}
	r, _ := budget.ParseRate("2/1h")
	if s := r.At(got, now); s.Remaining != 1 {
		t.Errorf("the rate leaves %d after a restart, want 1", s.Remaining)
	}

	// A second look changes nothing: no write per loop.
	before := &karpv1.NodePool{}
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(np), before); err != nil {
		t.Fatal(err)
	}
	restarted.persistStarts(ctx, read(), now)
	after := &karpv1.NodePool{}
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(np), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the NodePool was written again though nothing changed")
	}

	patched := after.DeepCopy()
	delete(patched.Annotations, budget.DisruptionRateAnnotation)
	if err := cluster.Client.Patch(ctx, patched, client.MergeFrom(after)); err != nil {
		t.Fatal(err)
	}
	restarted.persistStarts(ctx, read(), now)
	if v, ok := annotation(); ok {
		t.Errorf("without a rate the record stays: %q", v)
	}
}

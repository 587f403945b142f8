package operator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/controller/disruption"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// TestNoPreviewWhileNominatedPodsWait: a NodeClaim just initialized, held
// only by the pending pods nominated to it, gets no disruption preview
// (a status write and an event per NodeClaim of a scale-up, replaced
// seconds later); once nothing is on its way, the lasting verdict is
// written.
func TestNoPreviewWhileNominatedPodsWait(t *testing.T) {
	const pool = "preview-wait"
	setup(t, pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
	})
	readyInstance(t, pool, pool+"-a")
	ctx := context.Background()
	waiting := pendingPods(t, pool, 1, "100m")[0]
	nc := &karpv1.NodeClaim{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: pool + "-a"}, nc); err != nil {
		t.Fatal(err)
	}
	before := nc.DeepCopy()
	nc.Annotations = map[string]string{snapshot.NominatedPodsAnnotation: snapshot.EncodeNominations([]types.UID{waiting.UID})}
	if err := cluster.Client.Patch(ctx, nc, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	stop := startController(t, nil)
	defer stop()
	claim := func() (*karpv1.NodeClaim, error) {
		nc := &karpv1.NodeClaim{}
		return nc, cluster.Client.Get(ctx, client.ObjectKey{Name: pool + "-a"}, nc)
	}
	eventually(t, 30*time.Second, "the claim initialized", func() (bool, error) {
		nc, err := claim()
		if err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized), fmt.Errorf("not initialized")
	})
	loops := disruptionLoops(t)
	eventually(t, 30*time.Second, "two disruption loops", func() (bool, error) {
		n := disruptionLoops(t)
		return n >= loops+2, fmt.Errorf("%v loops since", n-loops)
	})
	if nc, err := claim(); err != nil {
		t.Fatal(err)
	} else if c := meta.FindStatusCondition(nc.Status.Conditions, disruption.PreviewCondition); c != nil {
		t.Errorf("preview %q: %s written while only a nominated pod held the node; want none yet", c.Reason, c.Message)
	}
	if err := cluster.Client.Delete(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the lasting verdict written once no pod is on its way", func() (bool, error) {
		nc, err := claim()
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(nc.Status.Conditions, disruption.PreviewCondition)
		return c != nil, fmt.Errorf("no preview")
	})
}

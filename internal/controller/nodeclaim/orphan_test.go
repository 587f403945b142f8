package nodeclaim

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/testkube"
)

// An instance launched for a NodeClaim whose status never recorded it (the
// claim was deleted between the launch and the status write) is terminated
// with the claim: the provider finds it by the claim's name.
func TestDeletedClaimTakesItsUnrecordedInstance(t *testing.T) {
	ctx := context.Background()
	createClass(t, "orphan", 0)
	np := createPool(t, "orphan", "orphan", "Never", 0)
	nc := createClaim(t, np, "orphan-a")

	// Launch as the lifecycle controller would, but write nothing back.
	provider, err := kwok.New(cluster.Client, kwok.ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	launched, err := provider.Create(ctx, nc)
	if err != nil {
		t.Fatalf("launching: %v", err)
	}
	if launched.Status.ProviderID == "" {
		t.Fatal("the provider returned no provider ID")
	}

	// Deleted, and drained as the termination controller would say.
	if err := cluster.Client.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{ConditionTypeDrained, ConditionTypeVolumesDetached} {
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c})
	}
	if err := cluster.Client.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}

	runControllers(t, DefaultOptions())
	testkube.Eventually(t, 30*time.Second, "the NodeClaim gone with its instance", func() (bool, error) {
		err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(nc), &karpv1.NodeClaim{})
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		instances, lerr := provider.List(ctx)
		if lerr != nil {
			return false, lerr
		}
		for _, in := range instances {
			if in.Name == nc.Name {
				return false, nil
			}
		}
		return true, nil
	})
	var nodes corev1.NodeList
	if err := cluster.Client.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Spec.ProviderID == launched.Status.ProviderID {
			t.Errorf("node %s of the unrecorded instance is left", n.Name)
		}
	}
}

package nodeclaim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/metrics"
)

// Karpenter's NodeClaim conditions for the two waits before a deleted
// claim's instance may go. The termination controller (package termination)
// sets them while it drains the node: Drained is False while pods are
// waited for and True once none is (reason TerminationGracePeriodElapsed
// when the deadline ended the wait); VolumesDetached is False while
// VolumeAttachments are waited for, True once they are gone, and False with
// reason TerminationGracePeriodElapsed when the deadline ended the wait.
const (
	ConditionTypeDrained                = "Drained"
	ConditionTypeVolumesDetached        = "VolumesDetached"
	ReasonTerminationGracePeriodElapsed = "TerminationGracePeriodElapsed"
)

// TerminationReady reports whether a deleted NodeClaim's node is drained and
// its volumes detached, or the terminationGracePeriod ended those waits: the
// instance may be deleted.
func TerminationReady(nc *karpv1.NodeClaim) bool {
	drained := meta.FindStatusCondition(nc.Status.Conditions, ConditionTypeDrained)
	volumes := meta.FindStatusCondition(nc.Status.Conditions, ConditionTypeVolumesDetached)
	return drained != nil && drained.Status == metav1.ConditionTrue && volumes != nil &&
		(volumes.Status == metav1.ConditionTrue || volumes.Reason == ReasonTerminationGracePeriodElapsed)
}

// terminate ends a deleted NodeClaim's instance and node, then releases the
// claim. The finalizer guarantees the instance never outlives its claim.
func (c *Controller) terminate(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nc, karpv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	if !TerminationReady(nc) {
		// The termination controller drains the node first; its update of
		// the claim's conditions brings the claim back here. A drain that
		// lasts is checked for a PodDisruptionBudget holding it.
		return c.checkDrain(ctx, nc)
	}
	if nc.Status.ProviderID == "" {
		// The instance may have been launched with its status never written
		// (the claim was deleted between the launch and the write, or the
		// write failed): the provider finds it by the claim's name.
		found, err := c.launchedFor(ctx, nc)
		if err != nil {
			return reconcile.Result{}, err
		}
		if found != "" {
			nc = nc.DeepCopy()
			nc.Status.ProviderID = found
		}
	}
	if nc.Status.ProviderID != "" {
		if wait := c.backoff.wait(nc.Name, callDelete, c.Now()); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		err := c.Cloud.Delete(ctx, nc)
		if err != nil && !cloudprovider.IsNotFound(err) {
			// The call may have taken effect before it failed; the retry's
			// Delete, or Get, finds the instance gone.
			retryIn := c.backoff.failed(nc.Name, callDelete, c.Now(), err)
			log.FromContext(ctx).Error(err, "deleting instance failed; retrying", "providerID", nc.Status.ProviderID, "retryIn", retryIn)
			return reconcile.Result{RequeueAfter: retryIn}, nil
		}
		c.backoff.succeeded(nc.Name, callDelete)
		if err == nil {
			// Deletion may take time at a real provider; come back to confirm.
			if _, gerr := c.Cloud.Get(ctx, nc.Status.ProviderID); !cloudprovider.IsNotFound(gerr) {
				return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
			}
		}
		var nodes corev1.NodeList
		if err := c.Client.List(ctx, &nodes, client.MatchingFields{ProviderIDField: nc.Status.ProviderID}); err != nil {
			return reconcile.Result{}, err
		}
		for i := range nodes.Items {
			if err := c.Client.Delete(ctx, &nodes.Items[i]); err != nil && !apierrors.IsNotFound(err) {
				return reconcile.Result{}, fmt.Errorf("deleting node %s: %w", nodes.Items[i].Name, err)
			}
		}
	}
	before := nc.DeepCopy()
	patched := nc.DeepCopy()
	controllerutil.RemoveFinalizer(patched, karpv1.TerminationFinalizer)
	if err := c.Client.Patch(ctx, patched, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("removing finalizer: %w", err)
	}
	c.writes.forget(nc.Name)
	c.backoff.forget(nc.Name)
	log.FromContext(ctx).Info("terminated NodeClaim", "providerID", nc.Status.ProviderID)
	c.Recorder.Event(nc, corev1.EventTypeNormal, "Terminated", "Instance and node removed")
	metrics.NodeClaimTerminated(nc, c.Now())
	if nc.Status.NodeName != "" {
		metrics.NodeTerminated(nc, c.Now())
	}
	return reconcile.Result{}, nil
}

// launchedFor returns the provider ID of an instance the provider launched
// for nc, or "".
func (c *Controller) launchedFor(ctx context.Context, nc *karpv1.NodeClaim) (string, error) {
	instances, err := c.Cloud.List(ctx)
	if err != nil {
		return "", fmt.Errorf("looking for an instance launched for NodeClaim %s: %w", nc.Name, err)
	}
	for _, in := range instances {
		if in.Name == nc.Name && in.Status.ProviderID != "" {
			return in.Status.ProviderID, nil
		}
	}
	return "", nil
}

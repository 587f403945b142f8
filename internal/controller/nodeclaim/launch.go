package nodeclaim

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/controller/nodepool"
	"github.com/nodewright/nodewright/internal/metrics"
)

// launch asks the provider for an instance. Insufficient capacity for every
// offering the claim allows ends the claim at once, so its pods are planned
// again with those offerings known to be short; other errors are retried
// with backoff (a throttled call after the wait it asked for) until
// LaunchTimeout. A retry after an error may find the instance the failed
// call launched: the provider's Create is idempotent by NodeClaim.
func (c *Controller) launch(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, error) {
	if wait := c.backoff.wait(nc.Name, callCreate, c.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	created, err := c.Cloud.Create(ctx, nc)
	if err != nil {
		var ice *cloudprovider.InsufficientCapacityError
		var notReady *cloudprovider.NodeClassNotReadyError
		switch {
		case errors.As(err, &ice):
			return c.fail(ctx, nc, "InsufficientCapacity", "%v", err)
		case errors.As(err, &notReady):
			// Retried below, as NodeClassNotReady.
		}
		reason := "LaunchFailed"
		if notReady != nil {
			reason = "NodeClassNotReady"
		}
		if age := c.Now().Sub(nc.CreationTimestamp.Time); c.Opts.LaunchTimeout > 0 && age > c.Opts.LaunchTimeout {
			// Karpenter counts a launch that timed out against the
			// NodePool's registration health, with the launch's reason.
			c.recordRegistration(ctx, nc, nodepool.Outcome{Reason: reason,
				Message: fmt.Sprintf("NodeClaim %s did not launch within %s: %v", nc.Name, c.Opts.LaunchTimeout, err)})
			return c.fail(ctx, nc, "LaunchTimeout", "no instance after %s: %v", age.Round(time.Second), err)
		}
		retryIn := c.backoff.failed(nc.Name, callCreate, c.Now(), err)
		log.FromContext(ctx).Error(err, "launching NodeClaim failed; retrying", "reason", reason, "retryIn", retryIn)
		before := nc.DeepCopy()
		if setCondition(nc, karpv1.ConditionTypeLaunched, metav1.ConditionFalse, reason, err.Error()) {
			c.Recorder.Event(nc, corev1.EventTypeWarning, reason, err.Error())
			if perr := c.patchStatus(ctx, before, nc); perr != nil {
				return reconcile.Result{}, perr
			}
		}
		return reconcile.Result{RequeueAfter: retryIn}, nil
	}
	c.backoff.succeeded(nc.Name, callCreate)

	// Labels and annotations first: if we crash before the status is
	// written, the next Create finds the same instance again.
	before := nc.DeepCopy()
	merged := nc.DeepCopy()
	for k, v := range created.Labels {
		if merged.Labels == nil {
			merged.Labels = map[string]string{}
		}
		merged.Labels[k] = v
	}
	for k, v := range created.Annotations {
		if merged.Annotations == nil {
			merged.Annotations = map[string]string{}
		}
		merged.Annotations[k] = v
	}
	if err := c.Client.Patch(ctx, merged, client.MergeFrom(before)); err != nil {
		return reconcile.Result{}, fmt.Errorf("recording launched instance's labels: %w", err)
	}
	c.writes.wrote(merged.Name, before.ResourceVersion, c.Now())
	statusBefore := merged.DeepCopy()
	merged.Status.ProviderID = created.Status.ProviderID
	merged.Status.ImageID = created.Status.ImageID
	merged.Status.Capacity = created.Status.Capacity
	merged.Status.Allocatable = created.Status.Allocatable
	setCondition(merged, karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "")
	setCondition(merged, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, "AwaitingNode", "waiting for a node with providerID "+created.Status.ProviderID)
	setCondition(merged, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, "AwaitingNode", "")
	if err := c.patchStatus(ctx, statusBefore, merged); err != nil {
		return reconcile.Result{}, err
	}
	pool := merged.Labels[karpv1.NodePoolLabelKey]
	metrics.NodeClaimsLaunched.WithLabelValues(pool).Inc()
	log.FromContext(ctx).Info("launched NodeClaim", "providerID", created.Status.ProviderID,
		"instanceType", merged.Labels[corev1.LabelInstanceTypeStable], "zone", merged.Labels[corev1.LabelTopologyZone],
		"capacityType", merged.Labels[karpv1.CapacityTypeLabelKey])
	c.Recorder.Eventf(merged, corev1.EventTypeNormal, "Launched", "Launched %s in %s (%s), providerID %s",
		merged.Labels[corev1.LabelInstanceTypeStable], merged.Labels[corev1.LabelTopologyZone],
		merged.Labels[karpv1.CapacityTypeLabelKey], created.Status.ProviderID)
	return reconcile.Result{RequeueAfter: c.Opts.RegistrationTimeout}, nil
}

package ec2nodeclass

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider/aws"
)

// Finalizer holds a deleted class until no NodeClaim uses it and the
// instance profile made for it is gone; Karpenter uses the same name.
const Finalizer = "karpenter.k8s.aws/termination"

// DefaultInterval is how often a class is resolved again: a new AMI
// release or a retagged subnet shows within it.
const DefaultInterval = 5 * time.Minute

// Controller reconciles EC2NodeClasses.
type Controller struct {
	Client   client.Client
	Resolver *aws.Resolver
	Recorder record.EventRecorder
	// Interval between resolutions of a class; zero is DefaultInterval.
	Interval time.Duration
	// OnReady is called when a class becomes Ready, so that pods waiting
	// for it are planned at once.
	OnReady func()
}

// SetupWithManager registers the controller.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	return ctrl.NewControllerManagedBy(mgr).Named("ec2nodeclass").For(&awsv1.EC2NodeClass{}).Complete(c)
}

// Reconcile resolves one class and writes its status when it changed.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx).WithValues("ec2nodeclass", req.Name)
	class := &awsv1.EC2NodeClass{}
	if err := c.Client.Get(ctx, req.NamespacedName, class); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if class.DeletionTimestamp != nil {
		return c.finalize(ctx, class)
	}
	if !controllerutil.ContainsFinalizer(class, Finalizer) {
		before := class.DeepCopy()
		controllerutil.AddFinalizer(class, Finalizer)
		if err := c.Client.Patch(ctx, class, client.MergeFrom(before)); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding finalizer to EC2NodeClass %s: %w", class.Name, err)
		}
	}
	wasReady := meta.IsStatusConditionTrue(class.Status.Conditions, aws.ConditionReady)
	status := c.Resolver.Resolve(ctx, class)
	if !equality.Semantic.DeepEqual(status, class.Status) {
		before := class.DeepCopy()
		class.Status = status
		if err := c.Client.Status().Patch(ctx, class, client.MergeFrom(before)); err != nil {
			return reconcile.Result{}, fmt.Errorf("writing EC2NodeClass %s status: %w", class.Name, err)
		}
	}
	ready := meta.FindStatusCondition(status.Conditions, aws.ConditionReady)
	switch {
	case ready != nil && ready.Status == "True" && !wasReady:
		logger.Info("EC2NodeClass is ready", "subnets", len(status.Subnets), "securityGroups", len(status.SecurityGroups),
			"amis", len(status.AMIs), "instanceProfile", status.InstanceProfile)
		if c.OnReady != nil {
			c.OnReady()
		}
	case ready != nil && ready.Status != "True":
		logger.Info("EC2NodeClass is not ready", "reason", ready.Message)
		// class.Status is status here: written above, or already equal.
		c.Recorder.Event(class, corev1.EventTypeWarning, "NotReady", aws.NotReadyReason(class))
		// Come back sooner: a missing tag or permission is usually fixed
		// by hand within minutes.
		return reconcile.Result{RequeueAfter: min(c.Interval, time.Minute)}, nil
	}
	return reconcile.Result{RequeueAfter: c.Interval}, nil
}

// finalize waits until no NodeClaim refers to the class, then deletes the
// instance profile and the launch templates made for it and lets it go.
func (c *Controller) finalize(ctx context.Context, class *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(class, Finalizer) {
		return reconcile.Result{}, nil
	}
	claims := &karpv1.NodeClaimList{}
	if err := c.Client.List(ctx, claims); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NodeClaims: %w", err)
	}
	users := 0
	for i := range claims.Items {
		if ref := claims.Items[i].Spec.NodeClassRef; ref != nil && ref.Name == class.Name && ref.GroupKind().Group == awsv1.Group {
			users++
		}
	}
	if users > 0 {
		c.Recorder.Eventf(class, corev1.EventTypeNormal, "WaitingOnNodeClaims", "%d NodeClaims still use this EC2NodeClass", users)
		return reconcile.Result{RequeueAfter: 10 * time.Second}, nil
	}
	if err := c.Resolver.DeleteInstanceProfile(ctx, class); err != nil {
		return reconcile.Result{}, err
	}
	if err := c.Resolver.DeleteLaunchTemplates(ctx, class); err != nil {
		return reconcile.Result{}, err
	}
	before := class.DeepCopy()
	controllerutil.RemoveFinalizer(class, Finalizer)
	if err := c.Client.Patch(ctx, class, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("removing finalizer from EC2NodeClass %s: %w", class.Name, err)
	}
	return reconcile.Result{}, nil
}

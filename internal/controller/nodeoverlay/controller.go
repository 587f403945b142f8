package nodeoverlay

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	"github.com/nodewright/nodewright/internal/instancetype"
)

// The NodeOverlay conditions, as Karpenter names them.
const (
	ConditionReady               = "Ready"
	ConditionValidationSucceeded = "ValidationSucceeded"
)

// Conditions are an overlay's conditions given its current ones: an overlay
// that does not compile is not applied (the provisioner skips it too) and
// says why, naming the field.
func Conditions(o *karpv1alpha1.NodeOverlay) []metav1.Condition {
	out := append([]metav1.Condition(nil), o.Status.Conditions...)
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&out, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: o.Generation})
	}
	if _, err := instancetype.CompileOverlay(o); err != nil {
		set(ConditionValidationSucceeded, metav1.ConditionFalse, "ValidationFailed", err.Error())
		set(ConditionReady, metav1.ConditionFalse, "NotReady", "ValidationSucceeded=False: "+err.Error())
		return out
	}
	set(ConditionValidationSucceeded, metav1.ConditionTrue, ConditionValidationSucceeded, "")
	set(ConditionReady, metav1.ConditionTrue, ConditionReady, "")
	return out
}

// Controller writes NodeOverlay conditions.
type Controller struct {
	Client client.Client
}

// SetupWithManager registers the controller.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("nodeoverlay.status").For(&karpv1alpha1.NodeOverlay{}).Complete(c)
}

// Reconcile writes one overlay's conditions when they changed.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	o := &karpv1alpha1.NodeOverlay{}
	if err := c.Client.Get(ctx, req.NamespacedName, o); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	conds := Conditions(o)
	if equality.Semantic.DeepEqual(conds, o.Status.Conditions) {
		return reconcile.Result{}, nil
	}
	before := o.DeepCopy()
	o.Status.Conditions = conds
	if err := c.Client.Status().Patch(ctx, o, client.MergeFrom(before)); err != nil {
		return reconcile.Result{}, fmt.Errorf("writing NodeOverlay %s conditions: %w", o.Name, client.IgnoreNotFound(err))
	}
	return reconcile.Result{}, nil
}

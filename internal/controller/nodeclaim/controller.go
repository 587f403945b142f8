package nodeclaim

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/controller/nodepool"
	"github.com/nodewright/nodewright/internal/learned"
	"github.com/nodewright/nodewright/internal/metrics"
)

// Options are the lifecycle's timeouts.
type Options struct {
	// LaunchTimeout ends a NodeClaim whose instance could not be created for
	// this long after the claim was made.
	LaunchTimeout time.Duration
	// RegistrationTimeout ends a NodeClaim whose node did not appear this long
	// after launch (Karpenter's registration TTL).
	RegistrationTimeout time.Duration
	// InitializationTimeout ends a NodeClaim whose node registered but did not
	// initialize for this long; 0 waits for ever. A node that is NotReady for
	// a while is waited for, not replaced, until then.
	InitializationTimeout time.Duration
	// MaxConcurrentReconciles bounds parallel reconciles. Each mostly waits
	// on the provider and the API server, so a burst needs many.
	MaxConcurrentReconciles int
	// NominationGrace is the provisioner's: how long after a node initialized
	// the pods nominated to its claim stay reserved there. Their
	// status.nominatedNodeName is written only while they are (nominate).
	NominationGrace time.Duration
	// WriteNominatedNodeName turns on nominate. It is off by default: on a
	// burst of thousands of pods it spares the extra nodes kube-scheduler's
	// own placement makes, but the scheduler binds far slower while many
	// pods are nominated (docs/provisioning.md has the figures).
	WriteNominatedNodeName bool
	// NominateDisplaced turns on nominate for the pods a claim's
	// DisplacedPodsAnnotation lists only: pods planned again after
	// kube-scheduler gave the room planned for them to others, each of which
	// it may displace again, at the cost of another node. Off by default:
	// in a burst of 10,000 pods hundreds are displaced at a time, and the
	// writes cost more than they saved (docs/provisioning.md).
	NominateDisplaced bool
	// ReleaseDisplaced is the provisioner's ReplanDisplaced: nominate then
	// leaves out the pods an initialized node has no room left for.
	ReleaseDisplaced bool
	// ConsistencyInterval is how long a deleted claim's node may drain
	// before, and then how often, ConsistentStateFound says whether a
	// PodDisruptionBudget blocks it; 0 never checks.
	ConsistencyInterval time.Duration
}

// DefaultOptions follow Karpenter: 5 minutes to launch, 15 to register; and
// 15 to initialize; consistency checked every 10 minutes.
func DefaultOptions() Options {
	return Options{LaunchTimeout: 5 * time.Minute, RegistrationTimeout: 15 * time.Minute,
		InitializationTimeout: 15 * time.Minute, MaxConcurrentReconciles: 64, NominationGrace: time.Minute,
		ConsistencyInterval: 10 * time.Minute}
}

// ProviderIDField indexes Nodes by spec.providerID and NodeClaims by
// status.providerID in the cache.
const ProviderIDField = "providerID"

// Controller reconciles NodeClaims.
type Controller struct {
	Client   client.Client
	Cloud    cloudprovider.CloudProvider
	Learned  *learned.Store
	Recorder record.EventRecorder
	Opts     Options
	// Now is the clock; tests may replace it.
	Now func() time.Time
	// Registrations receives the claims' registration outcomes for the
	// NodePool status controller; nil is nodepool.SharedRegistrations.
	Registrations *nodepool.Registrations

	writes  writes  // versions of claims this process wrote over
	scans   scans   // when deleted claims' drains were last checked
	backoff backoff // waits before provider calls that failed are made again
}

// SetupIndexes registers the providerID indexes the controller looks up by,
// and the pods by node a deleted claim's drain is checked with.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Node{}, ProviderIDField, func(o client.Object) []string {
		if id := o.(*corev1.Node).Spec.ProviderID; id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodes by providerID: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &karpv1.NodeClaim{}, ProviderIDField, func(o client.Object) []string {
		if id := o.(*karpv1.NodeClaim).Status.ProviderID; id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing NodeClaims by providerID: %w", err)
	}
	err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, PodNodeNameField, func(o client.Object) []string {
		if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	})
	// The termination controller's index of the same name means the same.
	if err != nil && !strings.Contains(err.Error(), "indexer conflict") {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	return nil
}

// SetupWithManager registers the controller, and with
// WriteNominatedNodeName or NominateDisplaced the indexes and the pod watch
// nominate needs;
// SetupIndexes must run first.
func (c *Controller) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if c.Now == nil {
		c.Now = time.Now
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("nodeclaim.lifecycle").
		For(&karpv1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.claimsOfNode)).
		// consolidateAfter is in the spec; status writes (every few seconds
		// in a burst) do not concern the claims.
		Watches(&karpv1.NodePool{}, handler.EnqueueRequestsFromMapFunc(c.claimsOfPool), builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	if c.Opts.WriteNominatedNodeName || c.Opts.NominateDisplaced {
		if err := setupNominationIndexes(ctx, mgr); err != nil {
			return err
		}
		b = b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(c.claimsOfPod), builder.WithPredicates(nominationCleared))
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: max(c.Opts.MaxConcurrentReconciles, 1)}).
		Complete(c)
}

func (c *Controller) claimsOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	n := o.(*corev1.Node)
	if n.Spec.ProviderID == "" {
		return nil
	}
	return c.claimsWith(ctx, ProviderIDField, n.Spec.ProviderID)
}

func (c *Controller) claimsOfPool(ctx context.Context, o client.Object) []reconcile.Request {
	var claims karpv1.NodeClaimList
	if err := c.Client.List(ctx, &claims, client.MatchingLabels{karpv1.NodePoolLabelKey: o.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(claims.Items))
	for i := range claims.Items {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: claims.Items[i].Name}}
	}
	return out
}

// claimsWith lists the NodeClaims an index maps value to, as requests.
func (c *Controller) claimsWith(ctx context.Context, field, value string) []reconcile.Request {
	var claims karpv1.NodeClaimList
	if err := c.Client.List(ctx, &claims, client.MatchingFields{field: value}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(claims.Items))
	for i := range claims.Items {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: claims.Items[i].Name}}
	}
	return out
}

// Reconcile moves one NodeClaim along its lifecycle.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := c.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		// The claim or its node changed since the cache's copy (kwok and
		// kube-controller-manager write nodes too); the watch brings the new
		// copy, and this looks again shortly without logging a failure.
		log.FromContext(ctx).V(1).Info("object changed meanwhile; looking again", "error", err.Error())
		return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
	}
	return res, err
}

func (c *Controller) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			c.writes.forget(req.Name)
			c.scans.forget(req.Name)
			c.backoff.forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if c.writes.stale(nc, c.Now()) {
		// The watch brings our own write, and with it this claim again; the
		// requeue is only a fallback.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("nodeclaim", nc.Name))
	if nc.DeletionTimestamp != nil {
		return c.terminate(ctx, nc)
	}
	if !controllerutil.ContainsFinalizer(nc, karpv1.TerminationFinalizer) {
		patched := nc.DeepCopy()
		controllerutil.AddFinalizer(patched, karpv1.TerminationFinalizer)
		if err := c.Client.Patch(ctx, patched, client.MergeFromWithOptions(nc, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
		c.writes.wrote(nc.Name, nc.ResourceVersion, c.Now())
		nc = patched
	}
	if !isTrue(nc, karpv1.ConditionTypeLaunched) {
		return c.launch(ctx, nc)
	}
	var node *corev1.Node
	var nodes corev1.NodeList
	if err := c.Client.List(ctx, &nodes, client.MatchingFields{ProviderIDField: nc.Status.ProviderID}); err != nil {
		return reconcile.Result{}, fmt.Errorf("finding node of %s: %w", nc.Status.ProviderID, err)
	}
	if len(nodes.Items) > 0 {
		node = &nodes.Items[0]
	}
	if !isTrue(nc, karpv1.ConditionTypeRegistered) {
		return c.register(ctx, nc, node)
	}
	if node == nil {
		// The node went away after registering; garbage collection decides
		// whether the instance is gone too.
		return reconcile.Result{}, nil
	}
	// Pods nominated to the claim after it registered, and pods whose
	// nominatedNodeName kube-scheduler cleared when it tried them before the
	// node could take them.
	c.nominate(ctx, nc, node)
	if !isTrue(nc, karpv1.ConditionTypeInitialized) {
		return c.initialize(ctx, nc, node)
	}
	return c.steady(ctx, nc, node)
}

// fail deletes a NodeClaim that cannot succeed, saying why.
func (c *Controller) fail(ctx context.Context, nc *karpv1.NodeClaim, reason, format string, args ...any) (reconcile.Result, error) {
	msg := fmt.Sprintf(format, args...)
	log.FromContext(ctx).Info("deleting NodeClaim", "reason", reason, "message", msg)
	c.Recorder.Event(nc, corev1.EventTypeWarning, reason, msg)
	if err := c.Client.Delete(ctx, nc); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("deleting NodeClaim after %s: %w", reason, err)
	}
	metrics.NodeClaimDisrupted(reason, nc)
	return reconcile.Result{}, nil
}

func (c *Controller) patchStatus(ctx context.Context, before, after *karpv1.NodeClaim) error {
	setReady(after)
	// What this write changes, before the write replaces after with what
	// the API server stored.
	changed := changedConditions(before.Status.Conditions, after.Status.Conditions)
	if err := patchClaimStatus(ctx, c.Client, before, after); err != nil {
		return fmt.Errorf("updating NodeClaim status: %w", err)
	}
	c.writes.wroteStatus(after.Name, after.UID, before.ResourceVersion, changed, c.Now())
	return nil
}

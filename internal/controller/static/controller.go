package static

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/controller/nodeclaim"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/learned"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/static"
)

// cacheWait bounds how long a NodeClaim this controller created may be
// missing from the cache before the count is trusted again: until the
// cache shows it, counting would launch it a second time.
const cacheWait = 15 * time.Second

// Controller reconciles static NodePools.
type Controller struct {
	Client   client.Client
	Cloud    cloudprovider.CloudProvider
	Learned  *learned.Store
	Recorder record.EventRecorder

	mu      sync.Mutex
	created map[string]map[string]time.Time // NodePool -> NodeClaim -> when created
}

// SetupWithManager registers the controller: it runs on every change of a
// NodePool or of a NodeClaim of one.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.ControllerManagedBy(mgr).Named("nodepool.static").For(&karpv1.NodePool{}).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if pool := o.GetLabels()[karpv1.NodePoolLabelKey]; pool != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
			}
			return nil
		})).Complete(c)
}

// Reconcile brings one static NodePool to its count.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &karpv1.NodePool{}
	if err := c.Client.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !static.Is(np) || np.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	list := &karpv1.NodeClaimList{}
	if err := c.Client.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: np.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NodeClaims of NodePool %s: %w", np.Name, err)
	}
	claims := make([]*karpv1.NodeClaim, len(list.Items))
	for i := range list.Items {
		claims[i] = &list.Items[i]
	}
	if c.awaitingCache(np.Name, claims) {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	in := static.Input{NodePool: np, Claims: claims, Replacing: planner.Replacing(claims)}
	d := static.Decide(in)
	if len(d.Delete) > 0 {
		// Only a scale-down needs the pods: read them then, not on every
		// NodeClaim change.
		pods, err := c.podsPerNode(ctx, claims)
		if err != nil {
			return reconcile.Result{}, err
		}
		in.Pods = pods
		d = static.Decide(in)
	}
	if d.Held != "" {
		c.Recorder.Eventf(np, corev1.EventTypeWarning, "StaticReplicasHeld", "%s", d.Held)
	}
	if d.Create > 0 {
		if err := c.launch(ctx, np, d); err != nil {
			c.Recorder.Eventf(np, corev1.EventTypeWarning, "StaticLaunchFailed", "%v", err)
			return reconcile.Result{}, err
		}
	}
	for _, name := range d.Delete {
		if err := c.remove(ctx, np, name, int(*np.Spec.Replicas)); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// launch creates d.Create NodeClaims of the cheapest fitting type.
func (c *Controller) launch(ctx context.Context, np *karpv1.NodePool, d static.Decision) error {
	overlays := &karpv1alpha1.NodeOverlayList{}
	if err := c.Client.List(ctx, overlays); err != nil {
		return fmt.Errorf("listing NodeOverlays: %w", err)
	}
	os := make([]*karpv1alpha1.NodeOverlay, len(overlays.Items))
	for i := range overlays.Items {
		os[i] = &overlays.Items[i]
	}
	poolTypes, poolErrs, _ := provisioning.ResolveTypes(ctx, c.Cloud, c.Learned, []*karpv1.NodePool{np}, os)
	if err := poolErrs[np.Name]; err != nil {
		return err
	}
	pool, err := snapshot.SolverPool(np, poolTypes, nil)
	if err != nil {
		return err
	}
	dsList := &appsv1.DaemonSetList{}
	if err := c.Client.List(ctx, dsList); err != nil {
		return fmt.Errorf("listing DaemonSets: %w", err)
	}
	dss := make([]*appsv1.DaemonSet, len(dsList.Items))
	for i := range dsList.Items {
		dss[i] = &dsList.Items[i]
	}
	shape, err := static.NewClaim(pool, dss)
	if err != nil {
		return err
	}
	for i := 0; i < d.Create; i++ {
		nc := provisioning.NodeClaimFor(np, shape)
		delete(nc.Annotations, snapshot.NominatedPodsAnnotation) // no pods wait for it
		if err := c.Client.Create(ctx, nc); err != nil {
			return fmt.Errorf("creating NodeClaim %d of %d for static NodePool %s: %w", i+1, d.Create, np.Name, err)
		}
		c.expect(np.Name, nc.Name)
		metrics.NodeClaimsCreated.WithLabelValues("static", np.Name).Inc()
		c.Recorder.Eventf(nc, corev1.EventTypeNormal, "Created", "Replica of static NodePool %s (%d of %d replicas were there)",
			np.Name, d.Have, *np.Spec.Replicas)
		log.FromContext(ctx).Info("launched static replica", "nodepool", np.Name, "nodeclaim", nc.Name, "replicas", *np.Spec.Replicas, "had", d.Have)
	}
	return nil
}

// remove deletes one NodeClaim of a pool scaled down; the termination
// controller drains its node as for any deletion.
func (c *Controller) remove(ctx context.Context, np *karpv1.NodePool, name string, replicas int) error {
	nc := &karpv1.NodeClaim{}
	if err := c.Client.Get(ctx, types.NamespacedName{Name: name}, nc); err != nil {
		return client.IgnoreNotFound(err)
	}
	msg := fmt.Sprintf("static NodePool %s scaled to %d replicas", np.Name, replicas)
	before := nc.DeepCopy()
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue,
		Reason: "ScaledDown", Message: msg, ObservedGeneration: nc.Generation})
	if err := c.Client.Status().Patch(ctx, nc, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("recording why NodeClaim %s goes: %w", name, err)
	}
	if err := c.Client.Delete(ctx, nc); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting NodeClaim %s of static NodePool %s: %w", name, np.Name, err)
	}
	metrics.NodeClaimDisrupted("ScaledDown", nc)
	c.Recorder.Eventf(nc, corev1.EventTypeNormal, "DisruptionTerminating", "Removing NodeClaim: %s", msg)
	log.FromContext(ctx).Info("removed static replica", "nodepool", np.Name, "nodeclaim", name, "replicas", replicas)
	return nil
}

// podsPerNode counts the pods that would have to move off each node of
// the claims.
func (c *Controller) podsPerNode(ctx context.Context, claims []*karpv1.NodeClaim) (map[string]int, error) {
	out := map[string]int{}
	for _, nc := range claims {
		if nc.Status.NodeName == "" || nc.DeletionTimestamp != nil {
			continue
		}
		pods := &corev1.PodList{}
		if err := c.Client.List(ctx, pods, client.MatchingFields{nodeclaim.PodNodeNameField: nc.Status.NodeName}); err != nil {
			return nil, fmt.Errorf("listing pods of node %s: %w", nc.Status.NodeName, err)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if snapshot.MustMove(p) {
				out[nc.Status.NodeName]++
			}
		}
	}
	return out, nil
}

// expect remembers a NodeClaim created, until the cache shows it.
func (c *Controller) expect(pool, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.created == nil {
		c.created = map[string]map[string]time.Time{}
	}
	if c.created[pool] == nil {
		c.created[pool] = map[string]time.Time{}
	}
	c.created[pool][name] = time.Now()
}

// awaitingCache reports whether a NodeClaim this controller created for
// the pool is not yet in the cache (and not yet given up on).
func (c *Controller) awaitingCache(pool string, claims []*karpv1.NodeClaim) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for _, nc := range claims {
		seen[nc.Name] = true
	}
	waiting := false
	for name, at := range c.created[pool] {
		switch {
		case seen[name], time.Since(at) > cacheWait:
			delete(c.created[pool], name)
		default:
			waiting = true
		}
	}
	return waiting
}

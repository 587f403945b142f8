package nodepool

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// Resync is how often a NodePool's status is looked at with no event: a
// NodeClass becoming ready shows within it.
const Resync = 30 * time.Second

// MinInterval spaces the looks at a NodePool, and so its status writes:
// during a burst its NodeClaims change many times a second, and each look
// reads every NodeClaim of the pool and their nodes. Spacing only the
// writes left every NodeClaim event that changed no status to a full look:
// in a 10,000-pod run a fifth of the controller's CPU went there, most of
// it copying NodeClaims and Nodes out of the cache, and a look per event
// costs the pool's size each time. The status is at most this late.
const MinInterval = 2 * time.Second

// Controller writes NodePool status.
type Controller struct {
	Client client.Client
	Cloud  cloudprovider.CloudProvider
	Now    func() time.Time
	// Registrations holds the registration outcomes the NodeClaim lifecycle
	// controller records; nil is SharedRegistrations.
	Registrations *Registrations

	mu     sync.Mutex
	looked map[string]time.Time
}

// SetupWithManager registers the controller: it runs for a NodePool when
// the pool or one of its NodeClaims changes, and every Resync.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	if c.Now == nil {
		c.Now = time.Now
	}
	c.looked = map[string]time.Time{}
	return ctrl.NewControllerManagedBy(mgr).Named("nodepool.status").
		For(&karpv1.NodePool{}).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if pool := o.GetLabels()[karpv1.NodePoolLabelKey]; pool != "" {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: pool}}}
			}
			return nil
		})).
		Complete(c)
}

// Reconcile observes one NodePool, decides its status and writes it when
// it changed.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &karpv1.NodePool{}
	if err := c.Client.Get(ctx, req.NamespacedName, np); err != nil {
		if apierrors.IsNotFound(err) {
			c.mu.Lock()
			delete(c.looked, req.Name)
			c.mu.Unlock()
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if np.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	c.mu.Lock()
	now := c.Now()
	wait := MinInterval - now.Sub(c.looked[np.Name])
	if wait <= 0 {
		c.looked[np.Name] = now
	}
	c.mu.Unlock()
	if wait > 0 {
		// Events that come meanwhile collapse into this one requeue.
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	// The claims and nodes are only read (Decide is pure), and a large pool
	// holds thousands: no copies out of the cache.
	claims := &karpv1.NodeClaimList{}
	if err := c.Client.List(ctx, claims, client.MatchingLabels{karpv1.NodePoolLabelKey: np.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NodeClaims of NodePool %s: %w", np.Name, err)
	}
	obs := Observed{Claims: claims.Items, Nodes: map[string]*corev1.Node{}}
	for _, cl := range claims.Items {
		if cl.Status.NodeName == "" {
			continue
		}
		n := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: cl.Status.NodeName}, n, client.UnsafeDisableDeepCopy); err == nil {
			obs.Nodes[n.Name] = n
		}
	}
	_, obs.ClassErr = c.Cloud.InstanceTypes(ctx, np)
	obs.NodeClassGeneration = c.nodeClassGeneration(ctx, np)
	obs.Registrations = c.registrations().Outcomes(np, obs.NodeClassGeneration)
	status := Decide(np, obs)
	if equality.Semantic.DeepEqual(status, np.Status) {
		return reconcile.Result{RequeueAfter: Resync}, nil
	}
	before := np.DeepCopy()
	np.Status = status
	// Optimistic lock: the disruption loop writes its budgets condition
	// into the same list, and a merge patch replaces the whole list.
	if err := c.Client.Status().Patch(ctx, np, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return reconcile.Result{RequeueAfter: Resync}, nil
}

func (c *Controller) registrations() *Registrations {
	if c.Registrations != nil {
		return c.Registrations
	}
	return SharedRegistrations
}

// nodeClassGeneration reads the generation of the NodePool's NodeClass,
// whatever its kind, through the scheme's type for it (so from the cache
// the provider reads it from too); 0 when it cannot be read.
func (c *Controller) nodeClassGeneration(ctx context.Context, np *karpv1.NodePool) int64 {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return 0
	}
	scheme := c.Client.Scheme()
	for gvk := range scheme.AllKnownTypes() {
		if gvk.Group != ref.Group || gvk.Kind != ref.Kind {
			continue
		}
		obj, err := scheme.New(gvk)
		if err != nil {
			return 0
		}
		class, ok := obj.(client.Object)
		if !ok || c.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, class) != nil {
			return 0
		}
		return class.GetGeneration()
	}
	return 0
}

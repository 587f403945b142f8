package termination

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
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
	"github.com/nodewright/nodewright/internal/controller/nodeclaim"
)

// Options tune the drain.
type Options struct {
	// StuckAfter is how long past its deletion timestamp a terminating pod
	// is still waited for.
	StuckAfter time.Duration
	// EvictionRetryMin and EvictionRetryMax bound the exponential backoff
	// between evictions of a pod that were refused (a PodDisruptionBudget,
	// a server error).
	EvictionRetryMin time.Duration
	EvictionRetryMax time.Duration
	// Resync is how often a claim that is still draining is looked at when
	// nothing happens to it.
	Resync time.Duration
	// MaxConcurrentReconciles bounds how many nodes drain at once.
	MaxConcurrentReconciles int
	// RoomWait is how long after a claim's deletion the eviction of a pod
	// that no ready node has room for may wait for new capacity (see
	// NoRoom); 0 evicts at once.
	RoomWait time.Duration
}

// DefaultOptions follow Karpenter: a terminating pod is waited for a minute
// past its deletion timestamp; refused evictions are retried from 1 second
// up to every 30.
func DefaultOptions() Options {
	return Options{StuckAfter: DefaultStuckAfter, EvictionRetryMin: time.Second, EvictionRetryMax: 30 * time.Second,
		Resync: time.Minute, MaxConcurrentReconciles: 10, RoomWait: 5 * time.Minute}
}

// Index names. Pods are indexed under the API server's own field selector,
// so the same list works against the cache and the API server.
const (
	PodNodeNameField              = "spec.nodeName"
	VolumeAttachmentNodeNameField = "spec.nodeName"
	ClaimNodeNameField            = "status.nodeName"
)

// SetupIndexes registers the indexes the controller looks up by; it must run
// before SetupWithManager, and after nodeclaim.SetupIndexes, whose node
// index by providerID the controller uses too.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	for _, ix := range []struct {
		obj   client.Object
		field string
		value func(client.Object) string
	}{
		{&corev1.Pod{}, PodNodeNameField, func(o client.Object) string { return o.(*corev1.Pod).Spec.NodeName }},
		{&storagev1.VolumeAttachment{}, VolumeAttachmentNodeNameField, func(o client.Object) string { return o.(*storagev1.VolumeAttachment).Spec.NodeName }},
		{&karpv1.NodeClaim{}, ClaimNodeNameField, func(o client.Object) string { return o.(*karpv1.NodeClaim).Status.NodeName }},
	} {
		err := mgr.GetFieldIndexer().IndexField(ctx, ix.obj, ix.field, func(o client.Object) []string {
			if v := ix.value(o); v != "" {
				return []string{v}
			}
			return nil
		})
		// Another controller may index the same field under the same name;
		// the index means the same, so one serves both.
		if err != nil && !strings.Contains(err.Error(), "indexer conflict") {
			return fmt.Errorf("indexing %T by %s: %w", ix.obj, ix.field, err)
		}
	}
	return nil
}

// Controller drains the nodes of deleted NodeClaims.
type Controller struct {
	Client   client.Client
	Recorder record.EventRecorder
	Opts     Options
	// Now is the clock; tests may replace it.
	Now func() time.Time
	// Room, when set, holds evictions of pods with nowhere to go yet.
	Room RoomChecker

	retries *retries
	held    heldLog
}

// SetupWithManager registers the controller; SetupIndexes must run first.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	if c.Now == nil {
		c.Now = time.Now
	}
	def := DefaultOptions()
	if c.Opts.StuckAfter <= 0 {
		c.Opts.StuckAfter = def.StuckAfter
	}
	if c.Opts.EvictionRetryMin <= 0 {
		c.Opts.EvictionRetryMin = def.EvictionRetryMin
	}
	if c.Opts.EvictionRetryMax < c.Opts.EvictionRetryMin {
		c.Opts.EvictionRetryMax = max(def.EvictionRetryMax, c.Opts.EvictionRetryMin)
	}
	if c.Opts.Resync <= 0 {
		c.Opts.Resync = def.Resync
	}
	c.retries = newRetries(c.Opts.EvictionRetryMin, c.Opts.EvictionRetryMax)
	deleting := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetDeletionTimestamp() != nil })
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodeclaim.termination").
		For(&karpv1.NodeClaim{}, builder.WithPredicates(deleting)).
		Watches(&corev1.Pod{}, c.onNode(func(o client.Object) string { return o.(*corev1.Pod).Spec.NodeName })).
		Watches(&storagev1.VolumeAttachment{}, c.onNode(func(o client.Object) string { return o.(*storagev1.VolumeAttachment).Spec.NodeName })).
		Watches(&corev1.Node{}, c.onNode(client.Object.GetName)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(c.Opts.MaxConcurrentReconciles, 1)}).
		Complete(c)
}

// onNode maps an object on a node to the deleted claims of that node.
func (c *Controller) onNode(nodeName func(client.Object) string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		name := nodeName(o)
		if name == "" {
			return nil
		}
		// Called for every pod event: the claims are only read, so not
		// copied out of the cache.
		var claims karpv1.NodeClaimList
		if err := c.Client.List(ctx, &claims, client.MatchingFields{ClaimNodeNameField: name}, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range claims.Items {
			if claims.Items[i].DeletionTimestamp != nil {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claims.Items[i])})
			}
		}
		return out
	})
}

// Reconcile takes one deleted NodeClaim a step further towards a drained
// node. Every step is recomputed from what the API server holds, so a
// restarted controller picks up where the last one stopped.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			c.retries.forget(req.Name)
			c.held.forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(nc, karpv1.TerminationFinalizer) || nodeclaim.TerminationReady(nc) {
		c.retries.forget(nc.Name)
		c.held.forget(nc.Name)
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("nodeclaim", nc.Name))
	in, err := c.observe(ctx, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	plan := Decide(in)
	if len(plan.Evict) > 0 && c.Room != nil && c.Opts.RoomWait > 0 {
		noRoom, err := c.Room.NoRoom(ctx, nc.Name, in.Now)
		if err != nil {
			// Evicting is what a drain without the check does; it is no
			// reason to stop.
			log.FromContext(ctx).Error(err, "cannot tell whether the drained pods have room; evicting anyway")
		} else if len(noRoom) > 0 {
			in.NoRoom, in.RoomWait = noRoom, c.Opts.RoomWait
			plan = Decide(in)
		}
		c.logHeld(ctx, nc.Name, plan, noRoom)
	}
	return c.act(ctx, nc, in.Node, plan)
}

// observe reads the claim's node, the pods bound to it, its
// VolumeAttachments and the volumes the pods' claims are bound to.
func (c *Controller) observe(ctx context.Context, nc *karpv1.NodeClaim) (Input, error) {
	in := Input{Claim: nc, Now: c.Now(), StuckAfter: c.Opts.StuckAfter}
	if nc.Status.ProviderID == "" {
		return in, nil
	}
	var nodes corev1.NodeList
	if err := c.Client.List(ctx, &nodes, client.MatchingFields{nodeclaim.ProviderIDField: nc.Status.ProviderID}); err != nil {
		return in, fmt.Errorf("finding node of %s: %w", nc.Status.ProviderID, err)
	}
	if len(nodes.Items) == 0 {
		return in, nil
	}
	in.Node = &nodes.Items[0]
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.MatchingFields{PodNodeNameField: in.Node.Name}); err != nil {
		return in, fmt.Errorf("listing pods on %s: %w", in.Node.Name, err)
	}
	for i := range pods.Items {
		in.Pods = append(in.Pods, &pods.Items[i])
	}
	var vas storagev1.VolumeAttachmentList
	if err := c.Client.List(ctx, &vas, client.MatchingFields{VolumeAttachmentNodeNameField: in.Node.Name}); err != nil {
		return in, fmt.Errorf("listing VolumeAttachments on %s: %w", in.Node.Name, err)
	}
	for i := range vas.Items {
		in.VolumeAttachments = append(in.VolumeAttachments, &vas.Items[i])
	}
	if len(in.VolumeAttachments) == 0 {
		return in, nil
	}
	in.ClaimedVolumes = map[types.NamespacedName]string{}
	for _, p := range in.Pods {
		for _, key := range ClaimsOf(p) {
			pvc := &corev1.PersistentVolumeClaim{}
			if err := c.Client.Get(ctx, key, pvc); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return in, fmt.Errorf("getting PersistentVolumeClaim %s: %w", key, err)
			}
			in.ClaimedVolumes[key] = pvc.Spec.VolumeName
		}
	}
	return in, nil
}

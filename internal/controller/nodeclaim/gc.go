package nodeclaim

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/metrics"
)

// GarbageCollector removes instances whose NodeClaim is gone (a claim
// deleted while its controller was down, say) and NodeClaims whose instance
// is gone (terminated outside nodewright). It runs on the leader only.
type GarbageCollector struct {
	Client    client.Client
	APIReader client.Reader
	Cloud     cloudprovider.CloudProvider
	Recorder  record.EventRecorder
	Interval  time.Duration
	// Grace protects claims just launched, whose instance a provider may not
	// list yet.
	Grace time.Duration
}

// Start runs collections until ctx ends.
func (g *GarbageCollector) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("gc")
	t := time.NewTicker(g.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := g.Collect(ctx); err != nil {
				logger.Error(err, "garbage collection failed")
			}
		}
	}
}

// Collect runs one collection.
func (g *GarbageCollector) Collect(ctx context.Context) error {
	logger := log.FromContext(ctx)
	instances, err := g.Cloud.List(ctx)
	if err != nil {
		return err
	}
	// Claims come from the cache. Listing them from the API server every
	// interval would encode every NodeClaim as JSON each time (tens of
	// megabytes at 10,000 nodes, on the API server's busiest minutes); an
	// instance the cache shows no claim for is instead confirmed with one
	// live read before it is deleted, since deleting an instance because the
	// cache had not yet seen its new claim would be a real loss.
	var claims karpv1.NodeClaimList
	if err := g.Client.List(ctx, &claims); err != nil {
		return err
	}
	byName := map[string]*karpv1.NodeClaim{}
	byProviderID := map[string]bool{}
	for i := range claims.Items {
		nc := &claims.Items[i]
		byName[nc.Name] = nc
		if nc.Status.ProviderID != "" {
			byProviderID[nc.Status.ProviderID] = true
		}
	}
	live := map[string]bool{}
	for _, inst := range instances {
		live[inst.Status.ProviderID] = true
		if byName[inst.Name] != nil || byProviderID[inst.Status.ProviderID] {
			continue
		}
		if err := g.APIReader.Get(ctx, client.ObjectKey{Name: inst.Name}, &karpv1.NodeClaim{}); !apierrors.IsNotFound(err) {
			if err != nil {
				logger.Error(err, "confirming an instance's NodeClaim is gone", "nodeclaim", inst.Name)
			}
			continue // the claim exists (the cache is behind), or we cannot tell
		}
		logger.Info("deleting instance without a NodeClaim", "providerID", inst.Status.ProviderID, "nodeclaim", inst.Name)
		if err := g.Cloud.Delete(ctx, inst); err != nil && !cloudprovider.IsNotFound(err) {
			logger.Error(err, "deleting leaked instance", "providerID", inst.Status.ProviderID)
		}
	}
	now := time.Now()
	for _, nc := range byName {
		if nc.DeletionTimestamp != nil || nc.Status.ProviderID == "" || live[nc.Status.ProviderID] {
			continue
		}
		if now.Sub(since(nc, karpv1.ConditionTypeLaunched)) < g.Grace {
			continue
		}
		if _, err := g.Cloud.Get(ctx, nc.Status.ProviderID); !cloudprovider.IsNotFound(err) {
			continue
		}
		logger.Info("deleting NodeClaim whose instance is gone", "nodeclaim", nc.Name, "providerID", nc.Status.ProviderID)
		g.Recorder.Eventf(nc, corev1.EventTypeWarning, "InstanceGone", "Instance %s no longer exists", nc.Status.ProviderID)
		if err := g.Client.Delete(ctx, nc); err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "deleting NodeClaim", "nodeclaim", nc.Name)
			continue
		}
		metrics.NodeClaimDisrupted("GarbageCollected", nc)
	}
	return nil
}

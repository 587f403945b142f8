package nodeclaim

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/controller/nodepool"
)

// recordRegistration tells the NodePool status controller how a claim's
// registration ended (it decides NodeRegistrationHealthy from the latest
// few): registered, or given up at the launch or registration timeout, as
// Karpenter's liveness and registration controllers count them. Only claims
// the NodePool owns count, as there; a claim left from a deleted NodePool
// of the same name says nothing about this one.
//
// It is called before the write that makes the outcome visible (the claim's
// status, its deletion), whose watch event wakes the status controller, so
// that it finds the outcome recorded; a write retried records the claim
// again, which counts once.
func (c *Controller) recordRegistration(ctx context.Context, nc *karpv1.NodeClaim, o nodepool.Outcome) {
	name := nc.Labels[karpv1.NodePoolLabelKey]
	if name == "" {
		return
	}
	np := &karpv1.NodePool{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
		log.FromContext(ctx).V(1).Info("cannot record the registration outcome", "nodepool", name, "error", err.Error())
		return
	}
	if !ownedByPool(nc, np) {
		return
	}
	o.NodeClaim = nc.Name
	c.registrations().Record(np, o)
}

func ownedByPool(nc *karpv1.NodeClaim, np *karpv1.NodePool) bool {
	for _, ref := range nc.OwnerReferences {
		if ref.Kind == "NodePool" && ref.UID == np.UID {
			return true
		}
	}
	return false
}

func (c *Controller) registrations() *nodepool.Registrations {
	if c.Registrations != nil {
		return c.Registrations
	}
	return nodepool.SharedRegistrations
}

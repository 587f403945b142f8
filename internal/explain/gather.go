package explain

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/internal/catalog"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	"github.com/nodewright/nodewright/internal/disruption/drift"
	"github.com/nodewright/nodewright/internal/learned"
	"github.com/nodewright/nodewright/internal/observe"
)

// Gather lists, from the API server, the objects the provisioner and the
// disruption controller look at.
func Gather(ctx context.Context, r client.Reader) (*Sources, error) {
	s, err := observe.List(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("%w (is the nodewright CRD installed, and may this user list it?)", err)
	}
	return s, nil
}

// Resolve turns sources into the core's Input: each NodePool's instance
// types from the provider, with learned capacity (store may be nil) and
// NodeOverlays applied exactly as provisioning does, and, when drift is
// true, the provider's drift verdict per NodeClaim as the disruption
// controller asks for it.
func Resolve(ctx context.Context, src *Sources, cp cloudprovider.CloudProvider, store *learned.Store, askDrift bool) Input {
	in := Input{Cluster: &src.Cluster, PDBs: src.PDBs, CloudDrift: map[string]string{}}
	in.PoolTypes, in.PoolErrors, in.OverlayErrors = provisioning.ResolveTypes(ctx, cp, store, src.Cluster.NodePools, src.Overlays)
	if !askDrift {
		return in
	}
	for _, nc := range src.Cluster.NodeClaims {
		if nc.DeletionTimestamp != nil || !drift.Eligible(nc) {
			continue
		}
		// An error means the provider cannot tell; the controller then
		// treats the claim as not drifted, and so do we.
		if reason, err := cp.IsDrifted(ctx, nc); err == nil && reason != "" {
			in.CloudDrift[nc.Name] = reason
		}
	}
	return in
}

// Live reads a cluster straight from the API server (no cache: one
// question, one read) and resolves it with the kwok provider as the
// controller builds it (catalog nil is the built-in one) and the learned
// capacity the controller keeps in namespace.
func Live(ctx context.Context, c client.Client, catalog *catalog.Catalog, namespace string) (Input, error) {
	src, err := Gather(ctx, c)
	if err != nil {
		return Input{}, err
	}
	cp, err := kwok.New(c, kwok.ProviderOptions{Catalog: catalog})
	if err != nil {
		return Input{}, err
	}
	store := learned.NewStore(c, namespace)
	if err := store.Load(ctx, c); err != nil {
		return Input{}, err
	}
	return Resolve(ctx, src, cp, store, true), nil
}

package explain

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	"github.com/nodewright/nodewright/internal/disruption/drift"
	"github.com/nodewright/nodewright/internal/learned"
)

// Gather lists, from the API server, the objects the provisioner and the
// disruption controller look at.
func Gather(ctx context.Context, r client.Reader) (*Sources, error) {
	var (
		pools    karpv1.NodePoolList
		claims   karpv1.NodeClaimList
		nodes    corev1.NodeList
		pods     corev1.PodList
		dss      appsv1.DaemonSetList
		pvcs     corev1.PersistentVolumeClaimList
		pvs      corev1.PersistentVolumeList
		scs      storagev1.StorageClassList
		nss      corev1.NamespaceList
		pdbs     policyv1.PodDisruptionBudgetList
		overlays karpv1alpha1.NodeOverlayList
	)
	for _, l := range []client.ObjectList{&pools, &claims, &nodes, &pods, &dss, &pvcs, &pvs, &scs, &nss, &pdbs, &overlays} {
		if err := r.List(ctx, l); err != nil {
			return nil, fmt.Errorf("listing %T: %w (is the nodewright CRD installed, and may this user list it?)", l, err)
		}
	}
	s := &Sources{}
	c := &s.Cluster
	c.NodePools = ptrs(pools.Items)
	c.NodeClaims = ptrs(claims.Items)
	c.Nodes = ptrs(nodes.Items)
	c.Pods = ptrs(pods.Items)
	c.DaemonSets = ptrs(dss.Items)
	c.PVCs = ptrs(pvcs.Items)
	c.PVs = ptrs(pvs.Items)
	c.StorageClasses = ptrs(scs.Items)
	c.Namespaces = ptrs(nss.Items)
	s.PDBs = ptrs(pdbs.Items)
	s.Overlays = ptrs(overlays.Items)
	return s, nil
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
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
func Live(ctx context.Context, c client.Client, catalog *kwok.Catalog, namespace string) (Input, error) {
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

// Package observe lists the objects that nodewright decides on, from a
// controller's cache or straight from the API server. The provisioner, the
// disruption controller and `explain` all read the cluster through it, so
// they see the same kinds.
package observe

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
	"github.com/nodewright/nodewright/internal/snapshot"
)

// Objects are one look at the cluster.
type Objects struct {
	Cluster  snapshot.Cluster
	PDBs     []*policyv1.PodDisruptionBudget
	Overlays []*karpv1alpha1.NodeOverlay
}

// List reads every kind the solver and the disruption planner use. Pass
// client.UnsafeDisableDeepCopy when reading a cache: the decisions only
// read, and at tens of thousands of pods a copy per loop is most of the
// garbage; the objects are then the cache's own and must not be changed.
func List(ctx context.Context, r client.Reader, opts ...client.ListOption) (*Objects, error) {
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
		if err := r.List(ctx, l, opts...); err != nil {
			return nil, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	o := &Objects{PDBs: ptrs(pdbs.Items), Overlays: ptrs(overlays.Items)}
	c := &o.Cluster
	c.NodePools = ptrs(pools.Items)
	c.NodeClaims = ptrs(claims.Items)
	c.Nodes = ptrs(nodes.Items)
	c.Pods = ptrs(pods.Items)
	c.DaemonSets = ptrs(dss.Items)
	c.PVCs = ptrs(pvcs.Items)
	c.PVs = ptrs(pvs.Items)
	c.StorageClasses = ptrs(scs.Items)
	c.Namespaces = ptrs(nss.Items)
	return o, nil
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

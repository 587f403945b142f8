package provisioning

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/learned"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// ResolveTypes asks the provider for each NodePool's instance types and
// applies learned capacity, then NodeOverlays (an overlay is the user's
// explicit word, so it wins over what was learned). A NodePool whose types
// cannot be had is left out with its error; a bad overlay is skipped with
// its error. Neither stops the others.
func ResolveTypes(ctx context.Context, cp cloudprovider.CloudProvider, store *learned.Store,
	pools []*karpv1.NodePool, overlays []*karpv1alpha1.NodeOverlay) (snapshot.PoolTypes, map[string]error, map[string]error) {
	var compiled []instancetype.Overlay
	overlayErrs := map[string]error{}
	for _, o := range overlays {
		c, err := instancetype.CompileOverlay(o)
		if err != nil {
			overlayErrs[o.Name] = err
			continue
		}
		compiled = append(compiled, c)
	}
	out := snapshot.PoolTypes{}
	poolErrs := map[string]error{}
	for _, np := range pools {
		if np.DeletionTimestamp != nil {
			continue
		}
		its, err := cp.InstanceTypes(ctx, np)
		if err != nil {
			poolErrs[np.Name] = fmt.Errorf("listing instance types for NodePool %s: %w", np.Name, err)
			continue
		}
		if store != nil {
			its = store.Apply(its)
		}
		out[np.Name] = instancetype.ApplyOverlays(its, compiled, snapshot.PoolLabels(np))
	}
	return out, poolErrs, overlayErrs
}

// TypeView is ResolveTypes's view for one NodeClaim, for the cloud
// provider's Create (cloudprovider.TypeView): learned capacity, then the
// NodeOverlays as they match the claim's NodePool, whose labels the claim
// carries. Overlays that do not compile are skipped, as ResolveTypes skips
// them; when the overlays cannot be read, only learned capacity applies and
// the claim is judged on the catalog's capacity, as before overlays.
func TypeView(c client.Reader, store *learned.Store) cloudprovider.TypeView {
	return func(ctx context.Context, claim *karpv1.NodeClaim, its []*instancetype.InstanceType) []*instancetype.InstanceType {
		if store != nil {
			its = store.Apply(its)
		}
		var list karpv1alpha1.NodeOverlayList
		if err := c.List(ctx, &list); err != nil {
			log.FromContext(ctx).Error(err, "reading NodeOverlays to judge a NodeClaim's instance types; judging without them", "nodeclaim", claim.Name)
			return its
		}
		var compiled []instancetype.Overlay
		for i := range list.Items {
			if o, err := instancetype.CompileOverlay(&list.Items[i]); err == nil {
				compiled = append(compiled, o)
			}
		}
		return instancetype.ApplyOverlays(its, compiled, claim.Labels)
	}
}

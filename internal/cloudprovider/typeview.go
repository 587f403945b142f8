package cloudprovider

import (
	"context"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/instancetype"
)

// TypeView is what the controller knows of instance types beyond a
// provider's catalog: capacity learned from real nodes and the NodeOverlays
// that match claim's NodePool. It returns one type for each of its, in the
// same order, the unchanged ones as they were.
//
// The solver plans with that view, so Create must judge fit and price with
// it too: a provider that checks a claim's requests against its bare catalog
// refuses the very claims an overlay or learned capacity made fit, and the
// refused claim is planned again, forever.
type TypeView func(ctx context.Context, claim *karpv1.NodeClaim, its []*instancetype.InstanceType) []*instancetype.InstanceType

// Viewer is a CloudProvider whose Create takes a TypeView.
type Viewer interface {
	SetTypeView(TypeView)
}

// SetTypeView gives v to cp, looking through decorators. It reports whether
// a provider took it.
func SetTypeView(cp CloudProvider, v TypeView) bool {
	for cp != nil {
		if s, ok := cp.(Viewer); ok {
			s.SetTypeView(v)
			return true
		}
		w, ok := cp.(Wrapper)
		if !ok {
			return false
		}
		cp = w.Unwrap()
	}
	return false
}

// Viewed applies v, or returns its unchanged when there is none.
func Viewed(ctx context.Context, v TypeView, claim *karpv1.NodeClaim, its []*instancetype.InstanceType) []*instancetype.InstanceType {
	if v == nil {
		return its
	}
	out := v(ctx, claim, its)
	if len(out) != len(its) {
		// A view that broke its contract is ignored rather than trusted to
		// line up with the catalog.
		return its
	}
	return out
}

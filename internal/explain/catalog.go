package explain

import (
	"context"
	"errors"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/instancetype"
)

// CatalogProvider offers a kwok catalog's instance types to every NodePool,
// for explaining manifests offline: there is no cloud to launch on and no
// NodeClass to check, so a NodePool gets the catalog whatever its
// nodeClassRef names. It launches nothing.
type CatalogProvider struct {
	types []*instancetype.InstanceType
}

var _ cloudprovider.CloudProvider = (*CatalogProvider)(nil)

// NewCatalogProvider builds the catalog's types as the kwok provider does,
// with the default VM memory overhead; nil is the built-in catalog.
func NewCatalogProvider(c *kwok.Catalog) (*CatalogProvider, error) {
	if c == nil {
		c = kwok.BuiltinCatalog()
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &CatalogProvider{types: c.Build(kwok.Options{VMMemoryOverheadPercent: instancetype.DefaultVMMemoryOverheadPercent})}, nil
}

var errOffline = errors.New("explaining offline: nothing is launched, deleted or looked up")

// Name is "kwok", the provider whose catalog this is.
func (p *CatalogProvider) Name() string { return kwok.ProviderName }

// InstanceTypes returns the catalog. Callers only read the types, and
// overlays copy what they change.
func (p *CatalogProvider) InstanceTypes(context.Context, *karpv1.NodePool) ([]*instancetype.InstanceType, error) {
	return p.types, nil
}

// Create fails: explain launches nothing.
func (p *CatalogProvider) Create(context.Context, *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	return nil, errOffline
}

// Delete fails: explain deletes nothing.
func (p *CatalogProvider) Delete(context.Context, *karpv1.NodeClaim) error { return errOffline }

// Get fails: there are no instances offline.
func (p *CatalogProvider) Get(context.Context, string) (*karpv1.NodeClaim, error) {
	return nil, errOffline
}

// List returns no instances.
func (p *CatalogProvider) List(context.Context) ([]*karpv1.NodeClaim, error) { return nil, nil }

// IsDrifted reports no drift: there is no NodeClass image to compare.
func (p *CatalogProvider) IsDrifted(context.Context, *karpv1.NodeClaim) (string, error) {
	return "", nil
}

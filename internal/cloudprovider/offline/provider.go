// Package offline resolves NodePools to instance types without a cloud, for
// `simulate` and `explain -f`: a NodePool gets the instance types its
// NodeClass would give it on its provider. A KWOKNodeClass gets the kwok
// catalog as the kwok provider builds it; an EC2NodeClass gets the AWS
// catalog of one region, shaped by the class's AMI family, kubelet settings
// and block devices as the AWS provider shapes nodes. Nothing is launched.
package offline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/catalog"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/cloudprovider/aws"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/instancetype"
)

// Options say which catalogs and classes to resolve against.
type Options struct {
	// KWOKCatalog is the kwok provider's catalog; nil is its built-in one.
	KWOKCatalog *catalog.Catalog
	// AWSCatalog is the catalog EC2NodeClasses launch from: one region's
	// types and offerings; nil is the built-in catalog of us-east-1, read
	// when an EC2NodeClass first needs it.
	AWSCatalog *catalog.Catalog
	// KWOKClasses and EC2Classes are the NodeClasses of the input, by name.
	KWOKClasses map[string]*kwokv1alpha1.KWOKNodeClass
	EC2Classes  map[string]*awsv1.EC2NodeClass
	// AnyClass gives a NodePool whose NodeClass is not in the input the
	// default shapes of its kind instead of an error (explain does, since
	// it answers about pods, not classes).
	AnyClass bool
}

// Provider offers instance types per NodePool. It is safe for concurrent
// use; the types it returns are shared and must not be changed.
type Provider struct {
	opts      Options
	kwokTypes []*instancetype.InstanceType

	mu       sync.Mutex
	awsTypes map[string][]*instancetype.InstanceType // by EC2NodeClass name
}

var _ cloudprovider.CloudProvider = (*Provider)(nil)

// New checks the catalogs and builds the kwok types once.
func New(opts Options) (*Provider, error) {
	if opts.KWOKCatalog == nil {
		opts.KWOKCatalog = kwok.BuiltinCatalog()
	}
	if err := opts.KWOKCatalog.Validate(); err != nil {
		return nil, err
	}
	if opts.AWSCatalog != nil {
		if err := opts.AWSCatalog.Validate(); err != nil {
			return nil, fmt.Errorf("AWS catalog: %w", err)
		}
	}
	return &Provider{
		opts:      opts,
		kwokTypes: kwok.Build(opts.KWOKCatalog, kwok.Options{VMMemoryOverheadPercent: instancetype.DefaultVMMemoryOverheadPercent}),
		awsTypes:  map[string][]*instancetype.InstanceType{},
	}, nil
}

// ErrOffline is returned by the calls that would touch instances.
var ErrOffline = errors.New("offline: nothing is launched, deleted or looked up")

// Name is "offline".
func (p *Provider) Name() string { return "offline" }

// InstanceTypes returns the types np's NodeClass gives it.
func (p *Provider) InstanceTypes(_ context.Context, np *karpv1.NodePool) ([]*instancetype.InstanceType, error) {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		if p.opts.AnyClass {
			return p.kwokTypes, nil
		}
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: "(none)", Reason: "the NodePool has no nodeClassRef"}
	}
	switch {
	case IsEC2NodeClass(ref):
		return p.ec2Types(ref.Name)
	case IsKWOKNodeClass(ref):
		if p.opts.KWOKClasses[ref.Name] == nil && !p.opts.AnyClass {
			return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: ref.Name, Reason: "KWOKNodeClass " + ref.Name + " is not in the input"}
		}
		return p.kwokTypes, nil
	case p.opts.AnyClass:
		return p.kwokTypes, nil
	}
	return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: ref.Name,
		Reason: fmt.Sprintf("%s %s of group %s is not a NodeClass nodewright knows offline (KWOKNodeClass, EC2NodeClass)", ref.Kind, ref.Name, ref.Group)}
}

// ec2Types shapes the AWS catalog by the named class, once per class.
func (p *Provider) ec2Types(name string) ([]*instancetype.InstanceType, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.opts.AWSCatalog == nil {
		c, err := awscatalog.Region(awscatalog.DefaultRegion)
		if err != nil {
			return nil, err
		}
		p.opts.AWSCatalog = c
	}
	if its, ok := p.awsTypes[name]; ok {
		return its, nil
	}
	class := p.opts.EC2Classes[name]
	if class == nil && !p.opts.AnyClass {
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: name, Reason: "EC2NodeClass " + name + " is not in the input"}
	}
	its, err := aws.InstanceTypes(p.opts.AWSCatalog, aws.SettingsFor(class))
	if err != nil {
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: name, Reason: err.Error()}
	}
	p.awsTypes[name] = its
	return its, nil
}

// Prices says where the AWS catalog's prices come from, when an
// EC2NodeClass has used it ("" otherwise): a run that planned with modelled
// spot prices says so.
func (p *Provider) Prices() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.opts.AWSCatalog
	if len(p.awsTypes) == 0 || c == nil {
		return ""
	}
	var parts []string
	if c.Region != "" {
		parts = append(parts, "AWS "+c.Region)
	}
	if c.PriceSource != "" {
		parts = append(parts, c.PriceSource)
	}
	if c.SpotPriceModel != "" {
		parts = append(parts, "spot "+c.SpotPriceModel)
	}
	return strings.Join(parts, "; ")
}

// IsEC2NodeClass reports whether ref names an EC2NodeClass. The group may
// carry a version, as some of Karpenter's own examples write it.
func IsEC2NodeClass(ref *karpv1.NodeClassReference) bool {
	gk := ref.GroupKind()
	return gk.Kind == "EC2NodeClass" && gk.Group == awsv1.Group
}

// IsKWOKNodeClass reports whether ref names a KWOKNodeClass; an empty group
// is taken as nodewright.dev.
func IsKWOKNodeClass(ref *karpv1.NodeClassReference) bool {
	gk := ref.GroupKind()
	return gk.Kind == "KWOKNodeClass" && (gk.Group == "" || gk.Group == kwokv1alpha1.Group)
}

// Create fails: nothing is launched offline.
func (p *Provider) Create(context.Context, *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	return nil, ErrOffline
}

// Delete fails: nothing is deleted offline.
func (p *Provider) Delete(context.Context, *karpv1.NodeClaim) error { return ErrOffline }

// Get fails: there are no instances offline.
func (p *Provider) Get(context.Context, string) (*karpv1.NodeClaim, error) { return nil, ErrOffline }

// List returns no instances.
func (p *Provider) List(context.Context) ([]*karpv1.NodeClaim, error) { return nil, nil }

// IsDrifted reports no drift: offline there is no image or cloud state to
// compare with. The simulator models the kwok image drift itself.
func (p *Provider) IsDrifted(context.Context, *karpv1.NodeClaim) (string, error) { return "", nil }

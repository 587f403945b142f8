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
	"maps"
	"slices"
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
	// types and offerings; nil is a built-in one, read when an
	// EC2NodeClass first needs it: that of the region the EC2Classes'
	// subnets are in when they all name zones of one region the built-in
	// catalog has (AWSRegion says which), else that of us-east-1.
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
	// region is the built-in AWS region to read when opts.AWSCatalog is
	// nil, and regionFrom why it was chosen: "" for the default, else
	// the EC2NodeClasses whose subnets are in it.
	region, regionFrom string

	mu sync.Mutex
	// awsCatalog is the catalog in use once an EC2NodeClass needed it, and
	// awsZones its zones.
	awsCatalog *catalog.Catalog
	awsZones   map[string]bool
	awsTypes   map[string][]*instancetype.InstanceType // by EC2NodeClass name
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
	p := &Provider{
		opts:      opts,
		kwokTypes: kwok.Build(opts.KWOKCatalog, kwok.Options{VMMemoryOverheadPercent: instancetype.DefaultVMMemoryOverheadPercent}),
		awsTypes:  map[string][]*instancetype.InstanceType{},
		region:    awscatalog.DefaultRegion,
	}
	if opts.AWSCatalog == nil {
		if region, from := inferRegion(opts.EC2Classes); region != "" {
			p.region, p.regionFrom = region, from
		}
	}
	return p, nil
}

// inferRegion is the region the classes' subnets are in, when every zone of
// every class's status.subnets names the same region and the built-in
// catalog has it, with the classes that say so ("EC2NodeClass default's
// subnets"); "" otherwise, and for the default region, which needs no
// saying. A dump of a cluster in us-west-2 then simulates in us-west-2
// without --region, instead of in us-east-1 with none of its zones.
func inferRegion(classes map[string]*awsv1.EC2NodeClass) (region, from string) {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(classes)) {
		zones := aws.SettingsFor(classes[name]).Zones
		for _, z := range zones {
			r, ok := awscatalog.ZoneRegion(z)
			if !ok || (region != "" && r != region) {
				return "", ""
			}
			region = r
		}
		if len(zones) > 0 {
			names = append(names, name)
		}
	}
	if region == "" || region == awscatalog.DefaultRegion || !slices.Contains(awscatalog.Regions(), region) {
		return "", ""
	}
	if len(names) == 1 {
		return region, "EC2NodeClass " + names[0] + "'s subnets"
	}
	return region, "the subnets of EC2NodeClasses " + strings.Join(names, ", ")
}

// AWSRegion is the built-in AWS region EC2NodeClasses launch from when no
// catalog was given, and why, as "us-west-2 (from EC2NodeClass default's
// subnets)"; "" when a catalog was given or the region is the default.
// Callers print it, since a region the user did not name must not pass
// unsaid.
func (p *Provider) AWSRegion() string {
	if p.regionFrom == "" {
		return ""
	}
	return p.region + " (from " + p.regionFrom + ")"
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
	if p.awsCatalog == nil {
		c := p.opts.AWSCatalog
		if c == nil {
			var err error
			if c, err = awscatalog.Region(p.region); err != nil {
				return nil, err
			}
		}
		p.awsCatalog, p.awsZones = c, catalogZones(c)
	}
	if its, ok := p.awsTypes[name]; ok {
		return its, nil
	}
	class := p.opts.EC2Classes[name]
	if class == nil && !p.opts.AnyClass {
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: name, Reason: "EC2NodeClass " + name + " is not in the input"}
	}
	s := aws.SettingsFor(class)
	if len(s.Zones) > 0 && !slices.ContainsFunc(s.Zones, func(z string) bool { return p.awsZones[z] }) {
		// Every type would be left out, and every pod of the NodePool
		// would pend as if no type fit: say which zones and which region
		// instead, and how to get the right one.
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: name, Reason: p.zoneMismatch(name, s.Zones)}
	}
	its, err := aws.InstanceTypes(p.awsCatalog, s)
	if err != nil {
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: name, Reason: err.Error()}
	}
	p.awsTypes[name] = its
	return its, nil
}

// catalogZones are the zones c has offerings in.
func catalogZones(c *catalog.Catalog) map[string]bool {
	zones := map[string]bool{}
	for _, t := range c.InstanceTypes {
		for _, o := range t.Offerings {
			zones[o.Zone] = true
		}
	}
	return zones
}

// zoneMismatch says that none of the zones of the named class's subnets
// is in the catalog in use, and how to run with one that has them: the
// region the zones' names give, when that is one region and not the one in
// use; else a catalog of the user's own.
func (p *Provider) zoneMismatch(name string, zones []string) string {
	zones = slices.Compact(slices.Sorted(slices.Values(zones)))
	c := p.awsCatalog
	var in string
	switch {
	case p.opts.AWSCatalog == nil && p.regionFrom == "":
		in = "AWS region " + c.Region + " (the default)"
	case p.opts.AWSCatalog == nil:
		in = "AWS region " + c.Region + " (from " + p.regionFrom + ")"
	case c.Region != "":
		in = "AWS region " + c.Region
	default:
		in = "the AWS catalog given"
	}
	msg := fmt.Sprintf("EC2NodeClass %s's subnets (status.subnets) are in zones %s, and %s, which nodewright launches from offline, has none of them (it has %s)",
		name, strings.Join(zones, ", "), in, strings.Join(slices.Sorted(maps.Keys(p.awsZones)), ", "))
	regions := map[string]bool{}
	for _, z := range zones {
		r, _ := awscatalog.ZoneRegion(z)
		regions[r] = true
	}
	if len(regions) != 1 || regions[""] {
		return msg + ": pass --region with the region of these zones, or --catalog with a catalog that offers types in them"
	}
	region := slices.Collect(maps.Keys(regions))[0]
	switch {
	case region == c.Region:
		// Local and Wavelength Zones: the right region, but the built-in
		// catalogs list availability zones only.
		return msg + ": the built-in catalogs list availability zones only, not Local or Wavelength Zones; pass --catalog with a catalog that offers types in these zones"
	case !slices.Contains(awscatalog.Regions(), region):
		return msg + fmt.Sprintf(": these zones are in region %s, which the built-in catalog does not have; pass --catalog with a catalog of its types (docs/catalog.md)", region)
	}
	return msg + fmt.Sprintf(": these zones are in region %s; pass --region %s", region, region)
}

// Prices says where the AWS catalog's prices come from, when an
// EC2NodeClass has used it ("" otherwise): a run that planned with modelled
// spot prices says so.
func (p *Provider) Prices() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.awsCatalog
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

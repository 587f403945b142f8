package aws

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/catalog"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Names of the AWS provider.
const (
	// ProviderName is the provider's name and the scheme of its provider
	// IDs, aws:///<zone>/<instance-id>.
	ProviderName = "aws"
	// InsufficientCapacityTTL is how long an offering that ran out of
	// capacity stays unavailable, as in Karpenter.
	InsufficientCapacityTTL = 3 * time.Minute
	// maxFleetTries bounds the CreateFleet calls of one Create: each try
	// leaves out the offerings the last one found short.
	maxFleetTries = 3
	// maxFleetTypes is how many of the cheapest instance types one
	// CreateFleet offers, as Karpenter truncates them.
	maxFleetTypes = 60

	// Drift reasons IsDrifted returns.
	DriftAMI            = "AMIDrift"
	DriftSubnet         = "SubnetDrift"
	DriftSecurityGroups = "SecurityGroupDrift"
	DriftNodeClass      = "NodeClassDrift"

	// Annotations the provider puts on a NodeClaim at launch, read by drift.
	AnnotationSubnet         = "nodewright.dev/aws-subnet"
	AnnotationSecurityGroups = "nodewright.dev/aws-security-groups"
	AnnotationNodeClassHash  = "karpenter.k8s.aws/ec2nodeclass-hash"
)

// ProviderOptions are the provider's settings; the command line fills them
// with Karpenter's names (--cluster-name and so on).
type ProviderOptions struct {
	ClusterName     string
	ClusterEndpoint string
	// CABundle is the cluster CA's PEM, for the nodes' bootstrap.
	CABundle []byte
	// ClusterCIDR is the cluster's service CIDR, which AL2023's nodeadm
	// requires.
	ClusterCIDR string
	Region      string
	// IsolatedVPC says the VPC has no route to the public Pricing API; the
	// built-in prices are used and no call is tried.
	IsolatedVPC             bool
	VMMemoryOverheadPercent float64
	ReservedENIs            int
	// Catalog is the region's instance types and prices before the first
	// discovery; nil is the built-in catalog of Region.
	Catalog *catalog.Catalog
	Clock   clock.PassiveClock
}

// Provider launches NodeClaims as EC2 instances. It is safe for concurrent
// use.
type Provider struct {
	kube  client.Client
	ec2   EC2API
	opts  ProviderOptions
	clock clock.PassiveClock

	catalog   atomic.Pointer[catalog.Catalog]
	ice       *cloudprovider.Unavailable
	shapes    sync.Map // shapeKey -> []*instancetype.InstanceType
	templates sync.Map // launch template name -> ID
	view      atomic.Pointer[cloudprovider.TypeView]
}

var _ cloudprovider.CloudProvider = (*Provider)(nil)

// SetTypeView makes Create judge fit and price as the solver does; see
// cloudprovider.TypeView.
func (p *Provider) SetTypeView(v cloudprovider.TypeView) { p.view.Store(&v) }

func (p *Provider) typeView() cloudprovider.TypeView {
	if v := p.view.Load(); v != nil {
		return *v
	}
	return nil
}

// NewProvider returns a provider that reads EC2NodeClasses through kube and
// calls EC2 through api.
func NewProvider(kube client.Client, api EC2API, opts ProviderOptions) (*Provider, error) {
	if opts.ClusterName == "" {
		return nil, fmt.Errorf("aws provider: --cluster-name is required: it tags and finds the instances of this cluster")
	}
	if opts.Region == "" {
		return nil, fmt.Errorf("aws provider: no region; set AWS_REGION or the SDK's configuration")
	}
	if opts.VMMemoryOverheadPercent < 0 || opts.VMMemoryOverheadPercent >= 1 {
		return nil, fmt.Errorf("aws provider: --vm-memory-overhead-percent %v must be a fraction in [0, 1), such as 0.075", opts.VMMemoryOverheadPercent)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	cat := opts.Catalog
	if cat == nil {
		var err error
		if cat, err = awscatalog.Region(opts.Region); err != nil {
			return nil, fmt.Errorf("aws provider: %w", err)
		}
	}
	p := &Provider{kube: kube, ec2: api, opts: opts, clock: opts.Clock,
		ice: cloudprovider.NewUnavailable(opts.Clock, InsufficientCapacityTTL)}
	p.catalog.Store(cat)
	return p, nil
}

// SetCatalog replaces the instance types and prices, after discovery.
func (p *Provider) SetCatalog(c *catalog.Catalog) {
	p.catalog.Store(c)
	p.shapes.Clear()
}

// Catalog is the catalog in use.
func (p *Provider) Catalog() *catalog.Catalog { return p.catalog.Load() }

// MarkUnavailable records that an offering is short of capacity, as a spot
// interruption says.
func (p *Provider) MarkUnavailable(o cloudprovider.Offering) { p.ice.Add(o) }

// Name is "aws".
func (p *Provider) Name() string { return ProviderName }

// InstanceTypes returns the types a NodePool's EC2NodeClass can launch: the
// catalog shaped by the class (AMI family, kubelet, disks), offered in the
// zones of its subnets, and only types one of its AMIs can run. A class that
// is not Ready is a *NodeClassNotReadyError, so the NodePool launches
// nothing and says why.
func (p *Provider) InstanceTypes(ctx context.Context, np *karpv1.NodePool) ([]*instancetype.InstanceType, error) {
	class, err := p.nodeClass(ctx, np.Name, np.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	types, err := p.shapesFor(class)
	if err != nil {
		return nil, err
	}
	out := make([]*instancetype.InstanceType, len(types))
	for i, it := range types {
		c := *it
		c.Requirements = it.Requirements.Copy()
		c.Capacity = it.Capacity.DeepCopy()
		c.Offerings = append(instancetype.Offerings(nil), it.Offerings...)
		for j := range c.Offerings {
			if c.Offerings[j].Available && p.ice.Has(offeringOf(it.Name, c.Offerings[j])) {
				c.Offerings[j].Available = false
			}
		}
		out[i] = &c
	}
	return out, nil
}

// shapesFor computes, once per class generation and status, the types the
// class can launch. The result is shared; callers copy before changing.
func (p *Provider) shapesFor(class *awsv1.EC2NodeClass) ([]*instancetype.InstanceType, error) {
	key := fmt.Sprintf("%s/%d/%s/%s", class.UID, class.Generation,
		joinIDs(class.Status.Subnets, func(s awsv1.Subnet) string { return s.ID + "@" + s.Zone }),
		joinIDs(class.Status.AMIs, func(a awsv1.AMI) string { return a.ID }))
	if v, ok := p.shapes.Load(key); ok {
		return v.([]*instancetype.InstanceType), nil
	}
	s := SettingsFor(class)
	s.VMMemoryOverheadPercent = p.opts.VMMemoryOverheadPercent
	s.ReservedENIs = p.opts.ReservedENIs
	all, err := InstanceTypes(p.catalog.Load(), s)
	if err != nil {
		return nil, fmt.Errorf("EC2NodeClass %s: %w", class.Name, err)
	}
	var out []*instancetype.InstanceType
	for _, it := range all {
		if amiFor(class.Status.AMIs, it) != nil {
			out = append(out, it)
		}
	}
	p.shapes.Store(key, out)
	return out, nil
}

// amiFor is the newest of the class's AMIs that can run type it.
func amiFor(amis []awsv1.AMI, it *instancetype.InstanceType) *awsv1.AMI {
	for i := range amis {
		reqs := scheduling.NewRequirements()
		for _, r := range amis[i].Requirements {
			reqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
		}
		if it.Requirements.Compatible(reqs) == nil {
			return &amis[i]
		}
	}
	return nil
}

func offeringOf(instanceType string, o instancetype.Offering) cloudprovider.Offering {
	return cloudprovider.Offering{InstanceType: instanceType, Zone: o.Zone, CapacityType: o.CapacityType}
}

// nodeClass returns the EC2NodeClass ref names, or a
// *NodeClassNotReadyError when it is missing, being deleted or not Ready.
func (p *Provider) nodeClass(ctx context.Context, owner string, ref *karpv1.NodeClassReference) (*awsv1.EC2NodeClass, error) {
	if ref == nil {
		return nil, &cloudprovider.NodeClassNotReadyError{Reason: owner + " has no nodeClassRef"}
	}
	if gk := ref.GroupKind(); gk.Group != awsv1.Group || gk.Kind != "EC2NodeClass" {
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: ref.Name,
			Reason: fmt.Sprintf("nodeClassRef is %s; the aws provider needs an EC2NodeClass of group %s", gk, awsv1.Group)}
	}
	class := &awsv1.EC2NodeClass{}
	if err := p.kube.Get(ctx, client.ObjectKey{Name: ref.Name}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: ref.Name, Reason: "EC2NodeClass " + ref.Name + " does not exist"}
		}
		return nil, fmt.Errorf("getting EC2NodeClass %s: %w", ref.Name, err)
	}
	if class.DeletionTimestamp != nil {
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: ref.Name, Reason: "EC2NodeClass " + ref.Name + " is being deleted"}
	}
	ready := meta.FindStatusCondition(class.Status.Conditions, ConditionReady)
	switch {
	case ready == nil:
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: ref.Name, Reason: "its status is not resolved yet"}
	case ready.Status != metav1.ConditionTrue:
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: ref.Name, Reason: NotReadyReason(class)}
	}
	return class, nil
}

// NotReadyReason names the conditions that keep a class from Ready, with
// their messages.
func NotReadyReason(class *awsv1.EC2NodeClass) string {
	var parts []string
	for _, t := range partConditions {
		if c := meta.FindStatusCondition(class.Status.Conditions, t); c != nil && c.Status != metav1.ConditionTrue {
			parts = append(parts, fmt.Sprintf("%s: %s", t, c.Message))
		}
	}
	if len(parts) == 0 {
		return "Ready is not True"
	}
	return strings.Join(parts, "; ")
}

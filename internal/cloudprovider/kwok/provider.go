package kwok

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/catalog"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/instancetype"
)

// Names, labels and annotations of the kwok provider.
const (
	// ProviderName is the provider's name and the scheme of its provider IDs.
	ProviderName = "kwok"
	// ProviderIDPrefix starts every provider ID; the rest is the Node's name,
	// which is the NodeClaim's name.
	ProviderIDPrefix = ProviderName + "://"
	// DriftReasonImage is IsDrifted's answer when the NodeClass's image changed.
	DriftReasonImage = "ImageDrift"

	// KWOKNodeAnnotation with value KWOKNodeAnnotationValue makes kwok animate
	// a Node; kwok leaves Nodes without it alone.
	KWOKNodeAnnotation      = "kwok.x-k8s.io/node"
	KWOKNodeAnnotationValue = "fake"
	// NodeClaimAnnotation on a Node names the NodeClaim it was launched for;
	// it marks the Node as an instance of this provider.
	NodeClaimAnnotation = "nodewright.dev/nodeclaim"
	// LaunchedAtAnnotation (RFC 3339) on a NodeClaim, and copied to its Node,
	// is when Create launched the instance; registration delays count from it.
	LaunchedAtAnnotation = "nodewright.dev/kwok-launched-at"
	// RegistrationDelayAnnotation (a Go duration) on a NodeClaim, and copied
	// to its Node, is the registration delay chosen at launch, so that a later
	// change to the NodeClass does not move a pending instance's Node.
	RegistrationDelayAnnotation = "nodewright.dev/kwok-registration-delay"
	// CreatedAtAnnotation (RFC 3339, with nanoseconds) on a Node is when the
	// provider created it by its own clock; NotReady windows and agent taints
	// count from it.
	CreatedAtAnnotation = "nodewright.dev/kwok-created-at"
	// ImageAnnotation on a Node is the image it runs.
	ImageAnnotation = "nodewright.dev/kwok-image"
	// FaultsAnnotation on a Node holds, as JSON in KWOKFaults form, the
	// NotReady window and agent taints it was created with.
	FaultsAnnotation = "nodewright.dev/kwok-faults"
	// NotReadyLabel is on a Node during its NotReady window; kwok is set up to
	// ignore Nodes with it, so that the NotReady status sticks.
	NotReadyLabel = "nodewright.dev/kwok-not-ready"
	// NotReadyDoneAnnotation (RFC 3339) on a Node records that its NotReady
	// window has passed, so that it happens once per Node.
	NotReadyDoneAnnotation = "nodewright.dev/kwok-not-ready-done"
	// NotReadyReason is the reason of the Ready=False condition in the window.
	NotReadyReason = "KubeletRestarting"

	// InsufficientCapacityTTL is how long an offering that ran out of capacity
	// stays unavailable.
	InsufficientCapacityTTL = 3 * time.Minute
	// DefaultAgentInterval is how often the agent looks at instances.
	DefaultAgentInterval = time.Second
	// DefaultRegistrationGrace is how long past its registration delay an
	// instance waits for the agent to create its Node; see
	// ProviderOptions.RegistrationGrace.
	DefaultRegistrationGrace = 15 * time.Minute
)

// ProviderOptions configure a Provider. The zero value is the built-in
// catalog, 7.5% VM memory overhead both modelled and real, no faults and the
// real clock.
type ProviderOptions struct {
	// Catalog is the instance-type catalog; nil is BuiltinCatalog().
	Catalog *catalog.Catalog
	// VMMemoryOverheadPercent is the share of memory the instance-type model
	// assumes the hypervisor keeps; nil is
	// instancetype.DefaultVMMemoryOverheadPercent.
	VMMemoryOverheadPercent *float64
	// ActualVMMemoryOverheadPercent is the share the simulated hypervisor
	// really keeps, which sets the memory capacity of the Nodes; nil is
	// instancetype.DefaultVMMemoryOverheadPercent. Making it differ from the
	// model exercises learned capacity.
	ActualVMMemoryOverheadPercent *float64
	// DefaultFaults apply to every KWOKNodeClass field by field, wherever the
	// class sets nothing.
	DefaultFaults kwokv1alpha1.KWOKFaults
	// FaultSeed seeds the draws of injected launch and delete errors
	// (faults.launchErrorPercent, faults.deleteErrorPercent): the same seed
	// fails the same calls of the same NodeClaims. Every injected error
	// names it.
	FaultSeed int64
	// Clock drives launch times, the insufficient capacity cache and the
	// agent; nil is the real clock.
	Clock clock.WithTicker
	// AgentInterval is the agent's period; zero is DefaultAgentInterval.
	AgentInterval time.Duration
	// LiveReader, when set, serves Get's read of the Node straight from the
	// API server. The client given to New is normally the informer cache,
	// which lags behind on a busy API server; Get's NotFound deletes the
	// NodeClaim (garbage collection), so it must not come from a cache that
	// has not yet seen the Node, or has fallen behind a broken watch.
	LiveReader client.Reader
	// Recorder, when set, receives the events of interruption fault
	// injection (a notice issued, a request refused).
	Recorder record.EventRecorder
	// RegistrationGrace is how long past its registration delay a pending
	// instance still exists without a Node, to cover a controller that was
	// down when the delay ended. Past it the instance counts as lost (Get
	// says not found) and the agent no longer creates its Node. Zero is
	// DefaultRegistrationGrace.
	RegistrationGrace time.Duration
	// RepairToleration replaces the 30 minutes of Karpenter's repair
	// policies (RepairPolicies), so that a test sees a node repaired in
	// seconds; zero or less is DefaultRepairToleration.
	RepairToleration time.Duration
}

// Provider is the kwok cloud provider. It is safe for concurrent use.
type Provider struct {
	client client.Client
	opts   ProviderOptions
	clock  clock.WithTicker
	actual float64 // the real VM memory overhead

	// types are the catalog's instance types, sorted by name and never
	// modified; byName indexes them and allocatable caches their model.
	types       []*instancetype.InstanceType
	byName      map[string]*instancetype.InstanceType
	allocatable map[string]corev1.ResourceList

	ice          *cloudprovider.Unavailable
	launchErrors *launchErrorCounter
	draws        *callDraws
	view         atomic.Pointer[cloudprovider.TypeView]
}

// SetTypeView makes Create judge fit and price as the solver does; see
// cloudprovider.TypeView.
func (p *Provider) SetTypeView(v cloudprovider.TypeView) { p.view.Store(&v) }

func (p *Provider) typeView() cloudprovider.TypeView {
	if v := p.view.Load(); v != nil {
		return *v
	}
	return nil
}

var _ cloudprovider.CloudProvider = (*Provider)(nil)

// New returns a Provider that keeps its instances through c, which must know
// core, karpenter.sh and nodewright.dev types.
func New(c client.Client, opts ProviderOptions) (*Provider, error) {
	if c == nil {
		return nil, fmt.Errorf("kwok provider: a Kubernetes client is required")
	}
	cat := opts.Catalog
	if cat == nil {
		cat = BuiltinCatalog()
	}
	if err := cat.Validate(); err != nil {
		return nil, fmt.Errorf("kwok provider: %w", err)
	}
	model, err := percentOption("VMMemoryOverheadPercent", opts.VMMemoryOverheadPercent)
	if err != nil {
		return nil, err
	}
	actual, err := percentOption("ActualVMMemoryOverheadPercent", opts.ActualVMMemoryOverheadPercent)
	if err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.AgentInterval <= 0 {
		opts.AgentInterval = DefaultAgentInterval
	}
	if opts.RegistrationGrace <= 0 {
		opts.RegistrationGrace = DefaultRegistrationGrace
	}
	p := &Provider{
		client:       c,
		opts:         opts,
		clock:        opts.Clock,
		actual:       actual,
		types:        Build(cat, Options{VMMemoryOverheadPercent: model}),
		byName:       map[string]*instancetype.InstanceType{},
		allocatable:  map[string]corev1.ResourceList{},
		ice:          cloudprovider.NewUnavailable(opts.Clock, InsufficientCapacityTTL),
		launchErrors: &launchErrorCounter{},
		draws:        newCallDraws(opts.FaultSeed),
	}
	for _, it := range p.types {
		p.byName[it.Name] = it
		p.allocatable[it.Name] = it.Allocatable()
	}
	return p, nil
}

func percentOption(name string, p *float64) (float64, error) {
	if p == nil {
		return instancetype.DefaultVMMemoryOverheadPercent, nil
	}
	if *p < 0 || *p >= 1 {
		return 0, fmt.Errorf("kwok provider: %s %v must be a fraction in [0, 1), such as 0.075 for 7.5%%", name, *p)
	}
	return *p, nil
}

// Name is "kwok".
func (p *Provider) Name() string { return ProviderName }

// InstanceTypes returns every catalog type, sorted by name, for a NodePool
// whose KWOKNodeClass exists (a *NodeClassNotReadyError otherwise, so that a
// NodePool pointing nowhere launches nothing): a KWOKNodeClass does not
// narrow them. Offerings that ran out of capacity within
// InsufficientCapacityTTL are marked unavailable. The types are copies the
// caller may change.
func (p *Provider) InstanceTypes(ctx context.Context, np *karpv1.NodePool) ([]*instancetype.InstanceType, error) {
	if np != nil {
		probe := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "of NodePool " + np.Name}}
		probe.Spec.NodeClassRef = np.Spec.Template.Spec.NodeClassRef
		if _, err := p.nodeClass(ctx, probe); err != nil {
			return nil, err
		}
	}
	out := make([]*instancetype.InstanceType, len(p.types))
	for i, it := range p.types {
		c := copyInstanceType(it)
		for j := range c.Offerings {
			if c.Offerings[j].Available && p.ice.Has(offeringOf(it.Name, c.Offerings[j])) {
				c.Offerings[j].Available = false
			}
		}
		out[i] = c
	}
	return out, nil
}

func copyInstanceType(it *instancetype.InstanceType) *instancetype.InstanceType {
	c := *it
	c.Requirements = it.Requirements.Copy()
	c.Capacity = it.Capacity.DeepCopy()
	c.Overhead.KubeReserved = it.Overhead.KubeReserved.DeepCopy()
	c.Overhead.SystemReserved = it.Overhead.SystemReserved.DeepCopy()
	c.Overhead.EvictionThreshold = it.Overhead.EvictionThreshold.DeepCopy()
	if it.CapacitySource != nil {
		c.CapacitySource = make(map[corev1.ResourceName]string, len(it.CapacitySource))
		for k, v := range it.CapacitySource {
			c.CapacitySource[k] = v
		}
	}
	c.Offerings = append(instancetype.Offerings(nil), it.Offerings...)
	return &c
}

func offeringOf(instanceType string, o instancetype.Offering) cloudprovider.Offering {
	return cloudprovider.Offering{InstanceType: instanceType, Zone: o.Zone, CapacityType: o.CapacityType}
}

// IsDrifted returns DriftReasonImage when the instance runs another image
// than its NodeClass now names, and "" otherwise, also when the claim's image
// is not known yet.
func (p *Provider) IsDrifted(ctx context.Context, claim *karpv1.NodeClaim) (string, error) {
	nc, err := p.nodeClass(ctx, claim)
	if err != nil {
		return "", err
	}
	if claim.Status.ImageID != "" && claim.Status.ImageID != imageOf(nc) {
		return DriftReasonImage, nil
	}
	return "", nil
}

func imageOf(nc *kwokv1alpha1.KWOKNodeClass) string {
	if nc.Spec.Image == "" {
		return kwokv1alpha1.DefaultImage
	}
	return nc.Spec.Image
}

// nodeClass returns claim's KWOKNodeClass, or a *NodeClassNotReadyError when
// the reference is not to one, it does not exist or it is being deleted.
func (p *Provider) nodeClass(ctx context.Context, claim *karpv1.NodeClaim) (*kwokv1alpha1.KWOKNodeClass, error) {
	ref := claim.Spec.NodeClassRef
	if ref == nil {
		return nil, &cloudprovider.NodeClassNotReadyError{Reason: "NodeClaim " + claim.Name + " has no nodeClassRef"}
	}
	if gk := ref.GroupKind(); gk.Group != kwokv1alpha1.Group || gk.Kind != "KWOKNodeClass" {
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: ref.Name,
			Reason: fmt.Sprintf("nodeClassRef is %s, the kwok provider needs a KWOKNodeClass of group %s", gk, kwokv1alpha1.Group)}
	}
	nc := &kwokv1alpha1.KWOKNodeClass{}
	if err := p.client.Get(ctx, client.ObjectKey{Name: ref.Name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: ref.Name, Reason: "KWOKNodeClass " + ref.Name + " does not exist"}
		}
		return nil, fmt.Errorf("getting KWOKNodeClass %s: %w", ref.Name, err)
	}
	if nc.DeletionTimestamp != nil {
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: ref.Name, Reason: "KWOKNodeClass " + ref.Name + " is being deleted"}
	}
	return nc, nil
}

// nodeNameOf returns the Node name of a kwok provider ID.
func nodeNameOf(providerID string) (string, error) {
	name, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	if !ok || name == "" {
		return "", fmt.Errorf("provider ID %q is not a kwok one (%s<name>)", providerID, ProviderIDPrefix)
	}
	return name, nil
}

package kwok

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// candidate is an offering a NodeClaim may launch as.
type candidate struct {
	it       *instancetype.InstanceType
	offering instancetype.Offering
}

func (c candidate) id() cloudprovider.Offering { return offeringOf(c.it.Name, c.offering) }

// Create launches the cheapest offering claim allows that has capacity,
// falling back within this call to the next cheapest when the faults make an
// offering short; see cloudprovider.CloudProvider. When the registration
// delay is zero the Node is created here; otherwise the agent creates it once
// the delay has passed. Called again for a claim whose Node exists, it
// returns that instance without launching another.
func (p *Provider) Create(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	logger := log.FromContext(ctx).WithValues("nodeclaim", claim.Name)
	nc, err := p.nodeClass(ctx, claim)
	if err != nil {
		return nil, err
	}
	if out, ok, err := p.alreadyLaunched(ctx, claim); err != nil || ok {
		return out, err
	}
	faults := effectiveFaults(nc.Spec.Faults, p.opts.DefaultFaults)
	if n, fail := p.launchErrors.fail(nc.UID, faults.LaunchErrors); fail {
		return nil, fmt.Errorf("launching NodeClaim %s: injected launch error %d of %d (KWOKNodeClass %s faults.launchErrors)",
			claim.Name, n, *faults.LaunchErrors, nc.Name)
	}
	fault := p.injectFault(claim, "Create", faults)
	if fault.fault == lostResponse && registrationDelay(faults) > 0 {
		// The instance would be recorded only by the claim's status, which
		// the caller writes from our answer: there is nothing to lose.
		fault.fault = failedCall
	}
	if fault.fault == failedCall || fault.fault == throttledCall {
		return nil, p.report(fault, "launching NodeClaim "+claim.Name)
	}

	var tried []cloudprovider.Offering
	for _, c := range p.candidates(ctx, claim) {
		if !outOfCapacity(faults, c.id()) {
			out, err := p.launch(ctx, claim, nc, faults, c)
			if err == nil && fault.fault == lostResponse {
				logger.Info("launched instance, then lost the response on purpose", "error", fault.err.Error())
				return nil, p.report(fault, "launching NodeClaim "+claim.Name)
			}
			return out, err
		}
		p.ice.Add(c.id())
		tried = append(tried, c.id())
		logger.Info("offering out of capacity, trying the next", "offering", c.id().String())
	}
	return nil, &cloudprovider.InsufficientCapacityError{NodeClaim: claim.Name, Tried: tried}
}

// candidates are the offerings claim allows, cheapest first (ties by type,
// zone and capacity type, so that the choice is deterministic): of types
// compatible with its requirements whose allocatable holds its requests,
// available in the catalog and not known to be short of capacity. Fit and
// price are judged as the solver judged them (the type view: learned
// capacity, NodeOverlays); the machine launched is the catalog's.
func (p *Provider) candidates(ctx context.Context, claim *karpv1.NodeClaim) []candidate {
	reqs := scheduling.NewRequirements()
	for _, r := range claim.Spec.Requirements {
		reqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	viewed := cloudprovider.Viewed(ctx, p.typeView(), claim, p.types)
	var out []candidate
	for i, it := range viewed {
		alloc := p.allocatable[it.Name]
		if it != p.types[i] {
			alloc = it.Allocatable()
		}
		if it.Requirements.Compatible(reqs) != nil || !cloudprovider.Fits(alloc, claim.Spec.Resources.Requests) {
			continue
		}
		for _, o := range it.Offerings {
			if o.Available && o.Allowed(reqs) && !p.ice.Has(offeringOf(it.Name, o)) {
				out = append(out, candidate{it: p.types[i], offering: o})
			}
		}
	}
	slices.SortFunc(out, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.offering.Price, b.offering.Price), cmp.Compare(a.it.Name, b.it.Name),
			cmp.Compare(a.offering.Zone, b.offering.Zone), cmp.Compare(a.offering.CapacityType, b.offering.CapacityType))
	})
	return out
}

// launch turns claim into an instance of c, creating its Node now when the
// registration delay is zero.
func (p *Provider) launch(ctx context.Context, claim *karpv1.NodeClaim, nc *kwokv1alpha1.KWOKNodeClass, faults kwokv1alpha1.KWOKFaults, c candidate) (*karpv1.NodeClaim, error) {
	now := p.clock.Now()
	delay := registrationDelay(faults)
	out := claim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range instanceLabels(c.it, c.offering.Zone, c.offering.CapacityType) {
		out.Labels[k] = v
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[LaunchedAtAnnotation] = now.UTC().Format(time.RFC3339)
	out.Annotations[RegistrationDelayAnnotation] = delay.String()
	out.Status.ProviderID = ProviderIDPrefix + claim.Name
	out.Status.ImageID = imageOf(nc)
	out.Status.Capacity, out.Status.Allocatable = p.nodeResources(c.it)

	logger := log.FromContext(ctx).WithValues("nodeclaim", claim.Name, "offering", c.id().String(), "price", c.offering.Price)
	if delay > 0 {
		logger.Info("launched instance; its Node appears after the registration delay", "registrationDelay", delay)
		return out, nil
	}
	node, err := p.buildNode(out, c.it, faults, now)
	if err != nil {
		return nil, fmt.Errorf("launching NodeClaim %s: %w", claim.Name, err)
	}
	created, err := p.createNode(ctx, node)
	if err != nil {
		return nil, fmt.Errorf("launching NodeClaim %s: %w", claim.Name, err)
	}
	if created != node {
		// An earlier call launched it (its answer lost) and our cache had
		// not seen the Node: return that instance, which may be of another
		// offering than this call chose.
		return p.claimFromNode(ctx, claim, created)
	}
	logger.Info("launched instance")
	return out, nil
}

// alreadyLaunched returns claim as launched when its Node exists already:
// the controller created it, then crashed before saving the result.
func (p *Provider) alreadyLaunched(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, bool, error) {
	node := &corev1.Node{}
	if err := p.client.Get(ctx, client.ObjectKey{Name: claim.Name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("launching NodeClaim %s: looking for its Node: %w", claim.Name, err)
	}
	if err := ownedBy(node, claim.Name); err != nil {
		return nil, false, fmt.Errorf("launching NodeClaim %s: %w", claim.Name, err)
	}
	out, err := p.claimFromNode(ctx, claim, node)
	return out, err == nil, err
}

// claimFromNode returns claim as launched as node, an instance of it that
// exists already.
func (p *Provider) claimFromNode(ctx context.Context, claim *karpv1.NodeClaim, node *corev1.Node) (*karpv1.NodeClaim, error) {
	it := p.byName[node.Labels[corev1.LabelInstanceTypeStable]]
	if it == nil {
		return nil, fmt.Errorf("launching NodeClaim %s: its Node has instance type %q, which the catalog lacks", claim.Name, node.Labels[corev1.LabelInstanceTypeStable])
	}
	out := claim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range instanceLabels(it, node.Labels[corev1.LabelTopologyZone], node.Labels[karpv1.CapacityTypeLabelKey]) {
		out.Labels[k] = v
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	for _, k := range []string{LaunchedAtAnnotation, RegistrationDelayAnnotation} {
		if v, ok := node.Annotations[k]; ok {
			out.Annotations[k] = v
		}
	}
	out.Status.ProviderID = node.Spec.ProviderID
	out.Status.ImageID = node.Annotations[ImageAnnotation]
	out.Status.Capacity = node.Status.Capacity.DeepCopy()
	out.Status.Allocatable = node.Status.Allocatable.DeepCopy()
	log.FromContext(ctx).Info("instance was launched before; returning it", "nodeclaim", claim.Name, "node", node.Name)
	return out, nil
}

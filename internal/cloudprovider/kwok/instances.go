package kwok

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// An instance is its Node, or, before the Node exists, its NodeClaim: one
// launched with a registration delay, not registered and not being deleted,
// whose delay plus the registration grace has not passed. Nothing else
// records instances, so a restarted controller finds exactly what was there.

// Get returns the instance with providerID, or a *cloudprovider.NotFoundError.
func (p *Provider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	name, err := nodeNameOf(providerID)
	if err != nil {
		return nil, err
	}
	reader := client.Reader(p.client)
	if p.opts.LiveReader != nil {
		reader = p.opts.LiveReader
	}
	node := &corev1.Node{}
	err = reader.Get(ctx, client.ObjectKey{Name: name}, node)
	switch {
	case err == nil && isInstance(node) && node.Spec.ProviderID == providerID:
		return instanceFromNode(node), nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("getting instance %s: %w", providerID, err)
	}
	claim, err := p.pendingClaim(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("getting instance %s: %w", providerID, err)
	}
	if claim == nil {
		return nil, &cloudprovider.NotFoundError{ProviderID: providerID}
	}
	return instanceFromClaim(claim), nil
}

// List returns every instance, sorted by name.
func (p *Provider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	// Read only (the instances copy what they keep): not copied out of
	// the cache.
	nodes := &corev1.NodeList{}
	if err := p.client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing kwok instances: listing Nodes: %w", err)
	}
	claims := &karpv1.NodeClaimList{}
	if err := p.client.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing kwok instances: listing NodeClaims: %w", err)
	}
	var out []*karpv1.NodeClaim
	withNode := map[string]bool{}
	for i := range nodes.Items {
		if n := &nodes.Items[i]; isInstance(n) {
			out = append(out, instanceFromNode(n))
			withNode[n.Name] = true
		}
	}
	now := p.clock.Now()
	for i := range claims.Items {
		if c := &claims.Items[i]; !withNode[c.Name] && p.pending(c, now) {
			out = append(out, instanceFromClaim(c))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delete deletes the Node of claim's instance and returns nil while it goes;
// a pending instance ends with its NodeClaim, so Delete returns nil for it
// too. Once neither is left it returns a *cloudprovider.NotFoundError. A
// claim without a provider ID is looked for under its own name, since a
// controller may have crashed between creating the Node and saving the ID.
// faults.deleteErrorPercent fails some calls: before they do anything, or,
// for a lost response, after.
func (p *Provider) Delete(ctx context.Context, claim *karpv1.NodeClaim) error {
	fault := p.injectFault(claim, "Delete", p.faultsFor(ctx, claim))
	switch fault.fault {
	case failedCall, throttledCall:
		return p.report(fault, "deleting instance of NodeClaim "+claim.Name)
	case lostResponse:
		if err := p.deleteInstance(ctx, claim); err != nil {
			return err
		}
		log.FromContext(ctx).Info("deleted instance, then lost the response on purpose", "nodeclaim", claim.Name, "error", fault.err.Error())
		return p.report(fault, "deleting instance of NodeClaim "+claim.Name)
	}
	return p.deleteInstance(ctx, claim)
}

func (p *Provider) deleteInstance(ctx context.Context, claim *karpv1.NodeClaim) error {
	providerID := claim.Status.ProviderID
	if providerID == "" {
		providerID = ProviderIDPrefix + claim.Name
	}
	name, err := nodeNameOf(providerID)
	if err != nil {
		return err
	}
	node := &corev1.Node{}
	err = p.client.Get(ctx, client.ObjectKey{Name: name}, node)
	switch {
	case err == nil && isInstance(node) && node.Spec.ProviderID == providerID:
		if node.DeletionTimestamp != nil {
			return nil
		}
		err := p.client.Delete(ctx, node, client.Preconditions{UID: &node.UID})
		if apierrors.IsNotFound(err) {
			return &cloudprovider.NotFoundError{ProviderID: providerID}
		}
		if err != nil {
			return fmt.Errorf("deleting instance %s: %w", providerID, err)
		}
		log.FromContext(ctx).Info("deleted instance", "nodeclaim", claim.Name, "node", name)
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("deleting instance %s: %w", providerID, err)
	}
	pending, err := p.pendingClaim(ctx, name)
	if err != nil {
		return fmt.Errorf("deleting instance %s: %w", providerID, err)
	}
	if pending == nil {
		return &cloudprovider.NotFoundError{ProviderID: providerID}
	}
	return nil
}

// pendingClaim returns NodeClaim name if it is a pending instance, else nil.
func (p *Provider) pendingClaim(ctx context.Context, name string) (*karpv1.NodeClaim, error) {
	claim := &karpv1.NodeClaim{}
	if err := p.client.Get(ctx, client.ObjectKey{Name: name}, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting NodeClaim %s: %w", name, err)
	}
	if !p.pending(claim, p.clock.Now()) {
		return nil, nil
	}
	return claim, nil
}

// pending reports whether claim is an instance whose Node has not been
// created yet (the caller checks that there is no Node): launched here with a
// registration delay, not registered, not being deleted, and not past its
// delay plus the registration grace.
func (p *Provider) pending(claim *karpv1.NodeClaim, now time.Time) bool {
	registerAt, ok := registrationTime(claim)
	return ok && claim.DeletionTimestamp == nil && !registered(claim) &&
		now.Before(registerAt.Add(p.opts.RegistrationGrace))
}

// registrationTime is when the Node of a delayed launch is due, from the
// annotations Create put on the claim. ok is false for claims that are not
// kwok instances or whose Node was due at launch: Create made that Node.
func registrationTime(claim *karpv1.NodeClaim) (time.Time, bool) {
	if claim.Status.ProviderID != ProviderIDPrefix+claim.Name {
		return time.Time{}, false
	}
	delay, err := time.ParseDuration(claim.Annotations[RegistrationDelayAnnotation])
	if err != nil || delay <= 0 {
		return time.Time{}, false
	}
	launched, err := time.Parse(time.RFC3339, claim.Annotations[LaunchedAtAnnotation])
	if err != nil {
		c := findCondition(claim.Status.Conditions, karpv1.ConditionTypeLaunched)
		if c == nil || c.Status != metav1.ConditionTrue {
			return time.Time{}, false
		}
		launched = c.LastTransitionTime.Time
	}
	return launched.Add(delay), true
}

// registered reports whether claim's Node has registered: its NodeClaim
// then follows the Node, and a missing Node is a gone instance.
func registered(claim *karpv1.NodeClaim) bool {
	c := findCondition(claim.Status.Conditions, karpv1.ConditionTypeRegistered)
	return claim.Status.NodeName != "" || c != nil && c.Status == metav1.ConditionTrue
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func instanceFromNode(node *corev1.Node) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              node.Annotations[NodeClaimAnnotation],
			Labels:            maps.Clone(node.Labels),
			Annotations:       instanceAnnotations(node.Annotations),
			CreationTimestamp: metav1.NewTime(createdAt(node)),
		},
		Status: karpv1.NodeClaimStatus{
			NodeName:    node.Name,
			ProviderID:  node.Spec.ProviderID,
			ImageID:     node.Annotations[ImageAnnotation],
			Capacity:    node.Status.Capacity.DeepCopy(),
			Allocatable: node.Status.Allocatable.DeepCopy(),
		},
	}
}

func instanceFromClaim(claim *karpv1.NodeClaim) *karpv1.NodeClaim {
	created := claim.CreationTimestamp
	if t, err := time.Parse(time.RFC3339, claim.Annotations[LaunchedAtAnnotation]); err == nil {
		created = metav1.NewTime(t)
	}
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              claim.Name,
			Labels:            maps.Clone(claim.Labels),
			Annotations:       instanceAnnotations(claim.Annotations),
			CreationTimestamp: created,
		},
		Status: karpv1.NodeClaimStatus{
			ProviderID:  claim.Status.ProviderID,
			ImageID:     claim.Status.ImageID,
			Capacity:    claim.Status.Capacity.DeepCopy(),
			Allocatable: claim.Status.Allocatable.DeepCopy(),
		},
	}
}

// instanceAnnotations keeps the provider's own annotations of an instance.
func instanceAnnotations(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if strings.HasPrefix(k, "nodewright.dev/kwok-") {
			out[k] = v
		}
	}
	return out
}

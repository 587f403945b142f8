package cloudprovider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/instancetype"
)

// CloudProvider creates and deletes the machines behind NodeClaims.
//
// Implementations must be safe for concurrent use. Create must be idempotent
// enough for a controller that may crash between calls: an instance is found
// again by the NodeClaim's name through Get or List.
type CloudProvider interface {
	// Name is the provider's name, the scheme of its provider IDs ("kwok").
	Name() string
	// InstanceTypes returns what nodePool may launch, with offerings marked
	// unavailable where the provider knows capacity is short. NodeOverlays and
	// learned capacity are applied by the caller.
	InstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*instancetype.InstanceType, error)
	// Create launches an instance for claim, choosing the cheapest available
	// offering that claim's requirements allow and falling back to the next
	// one when an offering is out of capacity. It returns a copy of claim
	// whose status holds the providerID, capacity, allocatable and image, and
	// whose labels hold the chosen instance type, zone and capacity type.
	// Errors are *InsufficientCapacityError when no allowed offering could be
	// launched, or *NodeClassNotReadyError, or transient errors to retry.
	Create(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error)
	// Delete terminates the instance behind claim.Status.ProviderID. It
	// returns *NotFoundError when the instance is already gone.
	Delete(ctx context.Context, claim *karpv1.NodeClaim) error
	// Get returns the instance with providerID as a NodeClaim (status, labels
	// and the owning claim's name in Name), or *NotFoundError. It must read
	// the provider's current state, not a cache that may lag: garbage
	// collection deletes a NodeClaim, and with it the node, on its
	// NotFoundError.
	Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error)
	// List returns every instance the provider launched for nodewright.
	List(ctx context.Context) ([]*karpv1.NodeClaim, error)
	// IsDrifted names why claim's instance no longer matches its NodeClass
	// ("ImageDrift"), or returns "" when it matches.
	IsDrifted(ctx context.Context, claim *karpv1.NodeClaim) (string, error)
}

// NotFoundError says an instance does not exist.
type NotFoundError struct{ ProviderID string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("instance %q not found", e.ProviderID)
}

// IsNotFound reports whether err is or wraps a *NotFoundError.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

// Offering names one offering that could not be launched.
type Offering struct {
	InstanceType string
	Zone         string
	CapacityType string
}

func (o Offering) String() string {
	return o.InstanceType + "/" + o.Zone + "/" + o.CapacityType
}

// InsufficientCapacityError says none of the offerings a NodeClaim allowed
// could be launched. Tried lists those that failed, in the order tried; the
// provider remembers them as unavailable for a while.
type InsufficientCapacityError struct {
	NodeClaim string
	Tried     []Offering
}

func (e *InsufficientCapacityError) Error() string {
	names := make([]string, len(e.Tried))
	for i, o := range e.Tried {
		names[i] = o.String()
	}
	if len(names) == 0 {
		return fmt.Sprintf("insufficient capacity for NodeClaim %s: no allowed offering is available", e.NodeClaim)
	}
	return fmt.Sprintf("insufficient capacity for NodeClaim %s: tried %s", e.NodeClaim, strings.Join(names, ", "))
}

// IsInsufficientCapacity reports whether err is or wraps an
// *InsufficientCapacityError.
func IsInsufficientCapacity(err error) bool {
	var ice *InsufficientCapacityError
	return errors.As(err, &ice)
}

// NodeClassNotReadyError says the NodeClaim's NodeClass is missing or not
// usable; the claim cannot launch until it is fixed.
type NodeClassNotReadyError struct {
	NodeClass string
	Reason    string
}

func (e *NodeClassNotReadyError) Error() string {
	return fmt.Sprintf("NodeClass %s is not ready: %s", e.NodeClass, e.Reason)
}

// Fits reports whether allocatable holds every positive request: whether
// an instance type can take a NodeClaim at all.
func Fits(allocatable, requests corev1.ResourceList) bool {
	for name, q := range requests {
		if q.Sign() <= 0 {
			continue
		}
		if a, ok := allocatable[name]; !ok || a.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// RepairPolicy says that a node whose condition of Type has had Status for
// longer than Toleration is broken for good and is to be replaced (Karpenter's
// node repair).
type RepairPolicy struct {
	ConditionType   corev1.NodeConditionType
	ConditionStatus corev1.ConditionStatus
	Toleration      time.Duration
}

// Repairer is a CloudProvider that declares its own repair policies; one that
// does not gets DefaultRepairPolicies.
type Repairer interface {
	RepairPolicies() []RepairPolicy
}

// DefaultRepairPolicies are Karpenter's for every provider: a node whose
// kubelet has not been Ready for 30 minutes.
func DefaultRepairPolicies() []RepairPolicy {
	return []RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, Toleration: 30 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, Toleration: 30 * time.Minute},
	}
}

// Wrapper is a CloudProvider that decorates another (metrics, say).
type Wrapper interface {
	Unwrap() CloudProvider
}

// RepairPoliciesOf returns a provider's repair policies, looking through
// decorators.
func RepairPoliciesOf(cp CloudProvider) []RepairPolicy {
	for cp != nil {
		if r, ok := cp.(Repairer); ok {
			return r.RepairPolicies()
		}
		w, ok := cp.(Wrapper)
		if !ok {
			break
		}
		cp = w.Unwrap()
	}
	return DefaultRepairPolicies()
}

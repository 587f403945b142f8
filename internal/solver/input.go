package solver

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Input is a snapshot of everything a solve looks at. The solver does not
// modify it.
type Input struct {
	// NodePools that may launch new nodes. Order does not matter: weight, then
	// name, decides which is tried first.
	NodePools []NodePool
	// Nodes are existing nodes and in-flight NodeClaims, with the pods bound or
	// nominated to them.
	Nodes []Node
	// Pods are the pending pods to place.
	Pods []*corev1.Pod
	// DaemonSets run a pod on every new node they tolerate and select; their
	// requests are reserved on each new NodeClaim.
	DaemonSets []*appsv1.DaemonSet
	// Volumes resolve the pods' PersistentVolumeClaims to zones.
	Volumes Volumes
	// Namespaces give the labels that pod affinity namespaceSelectors match.
	Namespaces []*corev1.Namespace
	// MinValuesBestEffort is Karpenter's --min-values-policy=BestEffort: a
	// pod that no NodeClaim can take while keeping the NodePool's minValues
	// is placed anyway, and the NodeClaims it lands on get the minValues
	// their instance types still meet (NewClaim.MinValuesRelaxed). Off
	// (Strict), such a pod is unschedulable on that NodePool.
	MinValuesBestEffort bool
	// IgnorePreferences is Karpenter's --preference-policy=Ignore: preferred
	// node affinity, preferred pod affinity and anti-affinity, ScheduleAnyway
	// spreads and PreferNoSchedule taints play no part in where pods go.
	// Off (Respect), they are held as requirements and relaxed one by one
	// when a pod fits nowhere.
	IgnorePreferences bool
	// Requests, when set, remembers the pods' summed requests across
	// solves of the same snapshot; nil sums them on every solve.
	Requests *Requests
}

// NodePool is a NodePool as the solver needs it.
type NodePool struct {
	Name   string
	Weight int32
	// Requirements of the template, with its labels folded in as In requirements.
	Requirements scheduling.Requirements
	// Labels of the template, put on every node.
	Labels        map[string]string
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
	// Limits cap the summed capacity of the pool's nodes ("nodes" counts nodes);
	// nil means no limit.
	Limits corev1.ResourceList
	// Usage is the summed capacity of the pool's existing and in-flight nodes,
	// counted against Limits.
	Usage corev1.ResourceList
	// InstanceTypes the pool may launch, NodeOverlays already applied.
	InstanceTypes []*instancetype.InstanceType
}

// Node is an existing node, or an in-flight NodeClaim not yet initialized.
type Node struct {
	// Name is the node's name, or the NodeClaim's while no node registered.
	Name string
	// NodePool is the owning NodePool, "" for nodes nodewright does not manage.
	NodePool string
	// InFlight is true until the node is initialized: its startup taints and the
	// well-known ephemeral taints do not keep pods away, as they will go.
	InFlight bool
	Labels   map[string]string
	Taints   []corev1.Taint
	// StartupTaints of the NodeClaim, ignored while InFlight.
	StartupTaints []corev1.Taint
	Allocatable   corev1.ResourceList
	// Pods bound or nominated to the node; their requests, ports and labels count.
	Pods []*corev1.Pod
	// Deleting nodes accept no new pods, though their pods still count for
	// topology until they go.
	Deleting bool
}

// Volumes holds the storage objects pods refer to.
type Volumes struct {
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
}

// Policies are the scheduling policies a cluster runs with, set by the
// controller's --min-values-policy and --preference-policy; the zero value
// is Karpenter's defaults (Strict, Respect).
type Policies struct {
	MinValuesBestEffort bool
	IgnorePreferences   bool
}

// Apply sets the policies on an input.
func (p Policies) Apply(in *Input) {
	in.MinValuesBestEffort, in.IgnorePreferences = p.MinValuesBestEffort, p.IgnorePreferences
}

// ParsePolicies reads the two flags' values, naming the flag at fault.
func ParsePolicies(minValues, preference string) (Policies, error) {
	var p Policies
	switch minValues {
	case "", "Strict":
	case "BestEffort":
		p.MinValuesBestEffort = true
	default:
		return p, fmt.Errorf("--min-values-policy %q: use Strict or BestEffort", minValues)
	}
	switch preference {
	case "", "Respect":
	case "Ignore":
		p.IgnorePreferences = true
	default:
		return p, fmt.Errorf("--preference-policy %q: use Respect or Ignore", preference)
	}
	return p, nil
}

package kwok

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/instancetype"
)

// restrictedLabels are set by others, never copied from a NodeClaim's
// requirements: the hostname is the Node's own, and the karpenter.sh
// lifecycle labels mark progress that a new Node has not made.
var restrictedLabels = map[string]bool{
	corev1.LabelHostname:           true,
	karpv1.NodeRegisteredLabelKey:  true,
	karpv1.NodeInitializedLabelKey: true,
}

// instanceLabels are the labels of an instance of type it bought as zone and
// capacityType: the type's single-valued labels (instance type, arch, os and
// the kwok shape labels) and the offering's.
func instanceLabels(it *instancetype.InstanceType, zone, capacityType string) map[string]string {
	labels := it.Requirements.Labels()
	labels[corev1.LabelTopologyZone] = zone
	labels[karpv1.CapacityTypeLabelKey] = capacityType
	return labels
}

// nodeResources are the capacity and allocatable of a real Node of type it:
// its memory is what is left after the actual VM overhead, and allocatable
// follows from that capacity with the model's other overheads, so that it
// equals the model's allocatable when the actual overhead is the modelled one.
func (p *Provider) nodeResources(it *instancetype.InstanceType) (capacity, allocatable corev1.ResourceList) {
	withActual := *it
	withActual.Overhead.VMMemoryPercent = p.actual
	withActual.CapacitySource = nil
	vm := withActual.VMMemoryOverhead()

	onNode := *it
	onNode.Capacity = it.Capacity.DeepCopy()
	mem := onNode.Capacity[corev1.ResourceMemory]
	mem.Sub(vm)
	onNode.Capacity[corev1.ResourceMemory] = mem
	onNode.Overhead.VMMemoryPercent = 0 // the capacity is already what the VM left
	return onNode.Capacity, onNode.Allocatable()
}

// buildNode makes the Node of a launched claim, whose labels hold the chosen
// offering (Create's result or the persisted claim). Its taints keep pods off
// it until registration and until the simulated agents are ready.
func (p *Provider) buildNode(claim *karpv1.NodeClaim, it *instancetype.InstanceType, faults kwokv1alpha1.KWOKFaults, now time.Time) (*corev1.Node, error) {
	zone, capacityType := claim.Labels[corev1.LabelTopologyZone], claim.Labels[karpv1.CapacityTypeLabelKey]
	if zone == "" || capacityType == "" {
		return nil, fmt.Errorf("NodeClaim %s has no %s or %s label; it was not launched by the kwok provider", claim.Name, corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey)
	}
	labels := map[string]string{}
	for _, r := range claim.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 && !restrictedLabels[r.Key] {
			labels[r.Key] = r.Values[0]
		}
	}
	for k, v := range claim.Labels {
		if !restrictedLabels[k] {
			labels[k] = v
		}
	}
	inst := instanceLabels(it, zone, capacityType)
	for k, v := range inst {
		labels[k] = v
	}
	labels[corev1.LabelHostname] = claim.Name

	annotations := map[string]string{
		KWOKNodeAnnotation:  KWOKNodeAnnotationValue,
		NodeClaimAnnotation: claim.Name,
		CreatedAtAnnotation: now.UTC().Format(time.RFC3339Nano),
		ImageAnnotation:     claim.Status.ImageID,
	}
	for _, k := range []string{LaunchedAtAnnotation, RegistrationDelayAnnotation} {
		if v, ok := claim.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	nf := nodeFaults(faults)
	if s, ok := encodeNodeFaults(nf); ok {
		annotations[FaultsAnnotation] = s
	}

	taints := appendTaints(nil, claim.Spec.Taints...)
	taints = appendTaints(taints, claim.Spec.StartupTaints...)
	taints = appendTaints(taints, karpv1.UnregisteredNoExecuteTaint)
	for _, t := range nf.AgentTaints {
		taints = appendTaints(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}

	capacity, allocatable := p.nodeResources(it)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: claim.Name, Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{ProviderID: ProviderIDPrefix + claim.Name, Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    inst[corev1.LabelArchStable],
				OperatingSystem: inst[corev1.LabelOSStable],
				OSImage:         claim.Status.ImageID,
			},
		},
	}, nil
}

// appendTaints adds the taints whose key and effect are not there yet: the
// API server refuses a Node with two, and an agent taint a NodePool also
// declares as a startup taint is one taint.
func appendTaints(taints []corev1.Taint, add ...corev1.Taint) []corev1.Taint {
	for _, t := range add {
		if !hasTaint(taints, t) {
			taints = append(taints, t)
		}
	}
	return taints
}

// createNode creates node, or accepts the one already there when it was made
// for the same NodeClaim: a controller that crashed after creating it
// launches again.
func (p *Provider) createNode(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	err := p.client.Create(ctx, node)
	if err == nil {
		return node, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating Node %s: %w", node.Name, err)
	}
	existing := &corev1.Node{}
	if err := p.client.Get(ctx, client.ObjectKeyFromObject(node), existing); err != nil {
		return nil, fmt.Errorf("creating Node %s: it exists, but reading it failed: %w", node.Name, err)
	}
	if err := ownedBy(existing, node.Annotations[NodeClaimAnnotation]); err != nil {
		return nil, fmt.Errorf("creating Node %s: %w", node.Name, err)
	}
	return existing, nil
}

// ownedBy checks that node is the live instance of NodeClaim claimName.
func ownedBy(node *corev1.Node, claimName string) error {
	if !isInstance(node) || node.Annotations[NodeClaimAnnotation] != claimName || node.Spec.ProviderID != ProviderIDPrefix+claimName {
		return fmt.Errorf("Node %s exists but is not the kwok instance of NodeClaim %s (annotation %s=%q, providerID %q)",
			node.Name, claimName, NodeClaimAnnotation, node.Annotations[NodeClaimAnnotation], node.Spec.ProviderID)
	}
	if node.DeletionTimestamp != nil {
		return fmt.Errorf("Node %s of NodeClaim %s is being deleted", node.Name, claimName)
	}
	return nil
}

// isInstance reports whether node is an instance of this provider.
func isInstance(node *corev1.Node) bool {
	_, ok := node.Annotations[NodeClaimAnnotation]
	return ok && strings.HasPrefix(node.Spec.ProviderID, ProviderIDPrefix)
}

// createdAt is when the provider created node, by its clock.
func createdAt(node *corev1.Node) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, node.Annotations[CreatedAtAnnotation]); err == nil {
		return t
	}
	return node.CreationTimestamp.Time
}

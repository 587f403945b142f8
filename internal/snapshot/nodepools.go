package snapshot

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
)

// PoolRequirements are a NodePool's template requirements with its labels and
// its own name label folded in as In requirements.
func PoolRequirements(np *karpv1.NodePool) scheduling.Requirements {
	reqs := scheduling.Requirements{}
	for _, r := range np.Spec.Template.Spec.Requirements {
		reqs.Add(scheduling.NewRequirementWithMinValues(r.Key, r.Operator, r.MinValues, r.Values...))
	}
	for k, v := range PoolLabels(np) {
		reqs.Add(scheduling.NewRequirement(k, corev1.NodeSelectorOpIn, v))
	}
	return reqs
}

// PoolLabels are the labels every node of the NodePool gets.
func PoolLabels(np *karpv1.NodePool) map[string]string {
	out := make(map[string]string, len(np.Spec.Template.Labels)+1)
	for k, v := range np.Spec.Template.Labels {
		out[k] = v
	}
	out[karpv1.NodePoolLabelKey] = np.Name
	return out
}

// SolverPool converts a NodePool for the solver, or says why it cannot
// launch; usage is its nodes' summed capacity, counted against its limits.
func SolverPool(np *karpv1.NodePool, types PoolTypes, usage corev1.ResourceList) (solver.NodePool, error) {
	return solverPool(np, types, usage)
}

// solverPool converts a NodePool, or says why it cannot launch.
func solverPool(np *karpv1.NodePool, types PoolTypes, usage corev1.ResourceList) (solver.NodePool, error) {
	if np.DeletionTimestamp != nil {
		return solver.NodePool{}, fmt.Errorf("NodePool %s is being deleted", np.Name)
	}
	its, ok := types[np.Name]
	if !ok {
		return solver.NodePool{}, fmt.Errorf("NodePool %s has no instance types: its NodeClass %s is missing or not ready", np.Name, nodeClassName(np))
	}
	var weight int32
	if np.Spec.Weight != nil {
		weight = *np.Spec.Weight
	}
	var limits corev1.ResourceList
	if len(np.Spec.Limits) > 0 {
		limits = corev1.ResourceList(np.Spec.Limits)
	}
	return solver.NodePool{
		Name:          np.Name,
		Weight:        weight,
		Requirements:  PoolRequirements(np),
		Labels:        PoolLabels(np),
		Taints:        np.Spec.Template.Spec.Taints,
		StartupTaints: np.Spec.Template.Spec.StartupTaints,
		Limits:        limits,
		Usage:         usage,
		InstanceTypes: its,
	}, nil
}

func nodeClassName(np *karpv1.NodePool) string {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return "(none)"
	}
	return ref.Kind + "/" + ref.Name
}

package scheduling

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// WeightedRequirements is one preferred node affinity term and its weight.
type WeightedRequirements struct {
	Weight       int32
	Requirements Requirements
}

// PodRequirementTerms returns what a node must offer to run the pod, one
// Requirements per term of its required node affinity: the terms are ORed, so
// a node fits the pod when it fits any one of them. Each is the term's
// matchExpressions intersected with the pod's nodeSelector, which holds for
// every term.
//
// matchFields are ignored: the only field Kubernetes supports is
// metadata.name, and a node being simulated has no name yet. (DaemonSet pods
// carry such a term to pin them to a node; ignoring it lets them land on
// every simulated node, which is what the simulation wants.)
//
// A pod without required node affinity gives a single Requirements, the
// nodeSelector alone (empty if it has none). Terms with neither
// matchExpressions nor matchFields are skipped, because the scheduler lets
// them match no node; if that leaves no term, the result is nil: no node can
// run the pod.
func PodRequirementTerms(pod *corev1.Pod) []Requirements {
	base := nodeSelectorRequirements(pod)
	required := requiredNodeSelector(pod)
	if required == nil {
		return []Requirements{base}
	}
	var out []Requirements
	for _, term := range required.NodeSelectorTerms {
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			continue
		}
		reqs := base.Copy()
		for _, e := range term.MatchExpressions {
			reqs.Add(NewRequirement(e.Key, e.Operator, e.Values...))
		}
		out = append(out, reqs)
	}
	return out
}

// FromPodNodeSelector returns the pod's nodeSelector intersected with the
// first usable term of its required node affinity: the first element of
// PodRequirementTerms. It is for callers that do not try the other ORed
// terms; those that do use PodRequirementTerms. When no term can match any
// node, it falls back to the nodeSelector alone; PodRequirementTerms tells
// that case apart by returning nil.
func FromPodNodeSelector(pod *corev1.Pod) Requirements {
	if terms := PodRequirementTerms(pod); len(terms) > 0 {
		return terms[0]
	}
	return nodeSelectorRequirements(pod)
}

// PreferredTerms returns the pod's preferred node affinity terms, heaviest
// first, keeping the pod's order among equal weights so that relaxing
// preferences one by one is deterministic. matchFields are ignored as in
// PodRequirementTerms. The terms are not intersected with the nodeSelector:
// they add to the required requirements, which callers already have.
func PreferredTerms(pod *corev1.Pod) []WeightedRequirements {
	if pod == nil || pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil {
		return nil
	}
	preferred := pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(preferred) == 0 {
		return nil
	}
	out := make([]WeightedRequirements, 0, len(preferred))
	for _, p := range preferred {
		out = append(out, WeightedRequirements{
			Weight:       p.Weight,
			Requirements: FromNodeSelectorRequirements(p.Preference.MatchExpressions...),
		})
	}
	slices.SortStableFunc(out, func(a, b WeightedRequirements) int { return cmp.Compare(b.Weight, a.Weight) })
	return out
}

func nodeSelectorRequirements(pod *corev1.Pod) Requirements {
	if pod == nil {
		return Requirements{}
	}
	return FromLabels(pod.Spec.NodeSelector)
}

func requiredNodeSelector(pod *corev1.Pod) *corev1.NodeSelector {
	if pod == nil || pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil {
		return nil
	}
	return pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

package solver

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Relaxation follows Karpenter: the solver first treats a pod's preferences as
// requirements (heaviest preferred node affinity term, preferred pod affinity
// and anti-affinity, ScheduleAnyway spreads, PreferNoSchedule taints); when the
// pod fits nowhere, it drops them one step at a time, in this order:
//
//  1. the first of several required node affinity terms (they are OR'ed)
//  2. the heaviest preferred pod affinity term
//  3. the heaviest preferred pod anti-affinity term
//  4. the heaviest preferred node affinity term
//  5. a ScheduleAnyway topology spread constraint
//  6. (if a NodePool has PreferNoSchedule taints) tolerate them
//
// relaxSteps applies n steps to a copy of the pod and reports how many took
// effect; effectivePod then turns what preferences remain into requirements.
func relaxSteps(p *corev1.Pod, n int, preferNoSchedule bool) (*corev1.Pod, int) {
	c := p.DeepCopy()
	done := 0
	for done < n {
		if !relaxOnce(c, preferNoSchedule) {
			break
		}
		done++
	}
	return c, done
}

func relaxOnce(p *corev1.Pod, preferNoSchedule bool) bool {
	a := p.Spec.Affinity
	if a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) > 1 {
			a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = terms[1:]
			return true
		}
	}
	if a != nil && a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = dropHeaviestPod(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		return true
	}
	if a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = dropHeaviestPod(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		return true
	}
	if a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		terms := append([]corev1.PreferredSchedulingTerm(nil), a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
		sort.SliceStable(terms, func(i, j int) bool { return terms[i].Weight > terms[j].Weight })
		a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = terms[1:]
		return true
	}
	for i, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.ScheduleAnyway {
			p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints[:i:i], p.Spec.TopologySpreadConstraints[i+1:]...)
			return true
		}
	}
	if preferNoSchedule {
		tol := corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectPreferNoSchedule}
		for _, t := range p.Spec.Tolerations {
			if t.Operator == corev1.TolerationOpExists && t.Key == "" && (t.Effect == "" || t.Effect == corev1.TaintEffectPreferNoSchedule) {
				return false
			}
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, tol)
		return true
	}
	return false
}

func dropHeaviestPod(terms []corev1.WeightedPodAffinityTerm) []corev1.WeightedPodAffinityTerm {
	out := append([]corev1.WeightedPodAffinityTerm(nil), terms...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Weight > out[j].Weight })
	return out[1:]
}

// effectivePod relaxes a pod n steps and folds its remaining preferences into
// requirements: the heaviest preferred node affinity term is ANDed into every
// required term; preferred pod (anti-)affinity terms and ScheduleAnyway spreads
// are read as required by ownedGroups, since it reads both lists.
func effectivePod(p *corev1.Pod, n int, preferNoSchedule bool) *corev1.Pod {
	c, _ := relaxSteps(p, n, preferNoSchedule)
	a := c.Spec.Affinity
	if a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		terms := append([]corev1.PreferredSchedulingTerm(nil), a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
		sort.SliceStable(terms, func(i, j int) bool { return terms[i].Weight > terms[j].Weight })
		pref := terms[0].Preference.MatchExpressions
		if a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
			a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
		}
		for i := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			t := &a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i]
			t.MatchExpressions = append(append([]corev1.NodeSelectorRequirement(nil), t.MatchExpressions...), pref...)
		}
	}
	return c
}

// canRelax reports whether one more relaxation step would change anything.
func canRelax(p *corev1.Pod, n int, preferNoSchedule bool) bool {
	_, done := relaxSteps(p, n+1, preferNoSchedule)
	return done > n
}

// withoutPreferences is p with every preference dropped, for
// Input.IgnorePreferences; required node affinity terms stay.
func withoutPreferences(p *corev1.Pod, preferNoSchedule bool) *corev1.Pod {
	c := p.DeepCopy()
	if a := c.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
		if a.PodAntiAffinity != nil {
			a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
		if a.NodeAffinity != nil {
			a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
	}
	kept := c.Spec.TopologySpreadConstraints[:0:0]
	for _, tsc := range c.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable != corev1.ScheduleAnyway {
			kept = append(kept, tsc)
		}
	}
	c.Spec.TopologySpreadConstraints = kept
	if preferNoSchedule {
		c.Spec.Tolerations = append(c.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectPreferNoSchedule})
	}
	return c
}

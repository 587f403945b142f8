package scheduling

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func podWith(nodeSelector map[string]string, required []corev1.NodeSelectorTerm, preferred []corev1.PreferredSchedulingTerm) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: nodeSelector}}
	if required != nil || preferred != nil {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: preferred,
		}}
		if required != nil {
			pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: required}
		}
	}
	return pod
}

func TestPodRequirementTerms(t *testing.T) {
	arch := "kubernetes.io/arch"
	nodeSelector := map[string]string{arch: "amd64"}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want []string // String() of each term
	}{
		{"nil pod", nil, []string{""}},
		{"no affinity, no nodeSelector", podWith(nil, nil, nil), []string{""}},
		{"nodeSelector only", podWith(nodeSelector, nil, nil), []string{"kubernetes.io/arch In [amd64]"}},
		{"only preferred affinity", podWith(nodeSelector, nil, []corev1.PreferredSchedulingTerm{
			{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr(zone, corev1.NodeSelectorOpIn, "a")}}},
		}), []string{"kubernetes.io/arch In [amd64]"}},
		{"nodeSelector and two ORed terms", podWith(nodeSelector, []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{expr(zone, corev1.NodeSelectorOpIn, "b", "a")}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{
				expr(ct, corev1.NodeSelectorOpIn, "spot"),
				expr(zone, corev1.NodeSelectorOpIn, "c", "d"),
				expr(zone, corev1.NodeSelectorOpNotIn, "d"),
			}},
		}, nil), []string{
			"kubernetes.io/arch In [amd64], topology.kubernetes.io/zone In [a b]",
			"karpenter.sh/capacity-type In [spot], kubernetes.io/arch In [amd64], topology.kubernetes.io/zone In [c]",
		}},
		{"term intersects the nodeSelector", podWith(nodeSelector, []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{expr(arch, corev1.NodeSelectorOpIn, "arm64")}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{expr(arch, corev1.NodeSelectorOpIn, "arm64", "amd64")}},
		}, nil), []string{"kubernetes.io/arch In []", "kubernetes.io/arch In [amd64]"}},
		{"matchFields ignored, empty term skipped", podWith(nodeSelector, []corev1.NodeSelectorTerm{
			{},
			{MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "node-1")}},
			{
				MatchExpressions: []corev1.NodeSelectorRequirement{expr(zone, corev1.NodeSelectorOpIn, "a")},
				MatchFields:      []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "node-1")},
			},
		}, nil), []string{"kubernetes.io/arch In [amd64]", "kubernetes.io/arch In [amd64], topology.kubernetes.io/zone In [a]"}},
		{"only empty terms: no node fits", podWith(nodeSelector, []corev1.NodeSelectorTerm{{}, {}}, nil), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			terms := PodRequirementTerms(tc.pod)
			var got []string
			for _, term := range terms {
				if term == nil {
					t.Fatalf("nil Requirements in %v", terms)
				}
				got = append(got, term.String())
			}
			if !slices.Equal(got, tc.want) || (tc.want == nil) != (terms == nil) {
				t.Errorf("PodRequirementTerms =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestPodRequirementTermsDoNotShare(t *testing.T) {
	pod := podWith(map[string]string{zone: "a"}, []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{expr(ct, corev1.NodeSelectorOpIn, "spot")}},
		{MatchExpressions: []corev1.NodeSelectorRequirement{expr(ct, corev1.NodeSelectorOpIn, "on-demand")}},
	}, nil)
	terms := PodRequirementTerms(pod)
	terms[0].Add(req(gpu, corev1.NodeSelectorOpExists))
	if terms[1].Has(gpu) {
		t.Errorf("Add on one term changed another: %v", terms[1])
	}
}

func TestFromPodNodeSelector(t *testing.T) {
	nodeSelector := map[string]string{zone: "a"}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"no affinity", podWith(nodeSelector, nil, nil), "topology.kubernetes.io/zone In [a]"},
		{"first term only", podWith(nodeSelector, []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{expr(ct, corev1.NodeSelectorOpIn, "spot")}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{expr(ct, corev1.NodeSelectorOpIn, "on-demand")}},
		}, nil), "karpenter.sh/capacity-type In [spot], topology.kubernetes.io/zone In [a]"},
		{"first usable term", podWith(nodeSelector, []corev1.NodeSelectorTerm{
			{},
			{MatchExpressions: []corev1.NodeSelectorRequirement{expr(ct, corev1.NodeSelectorOpIn, "on-demand")}},
		}, nil), "karpenter.sh/capacity-type In [on-demand], topology.kubernetes.io/zone In [a]"},
		{"no usable term: nodeSelector alone", podWith(nodeSelector, []corev1.NodeSelectorTerm{{}}, nil), "topology.kubernetes.io/zone In [a]"},
		{"nil pod", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FromPodNodeSelector(tc.pod)
			if got == nil || got.String() != tc.want {
				t.Errorf("FromPodNodeSelector = %v, want %q", got, tc.want)
			}
		})
	}
}

func TestPreferredTerms(t *testing.T) {
	term := func(weight int32, z string) corev1.PreferredSchedulingTerm {
		return corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{expr(zone, corev1.NodeSelectorOpIn, z)},
			MatchFields:      []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "n")},
		}}
	}
	pod := podWith(map[string]string{ct: "spot"}, nil, []corev1.PreferredSchedulingTerm{
		term(10, "first-10"), term(50, "50"), term(10, "second-10"), term(100, "100"), term(50, "second-50"),
	})
	got := PreferredTerms(pod)
	want := []struct {
		weight int32
		reqs   string
	}{
		{100, "topology.kubernetes.io/zone In [100]"},
		{50, "topology.kubernetes.io/zone In [50]"},
		{50, "topology.kubernetes.io/zone In [second-50]"},
		{10, "topology.kubernetes.io/zone In [first-10]"},
		{10, "topology.kubernetes.io/zone In [second-10]"},
	}
	if len(got) != len(want) {
		t.Fatalf("PreferredTerms gave %d terms, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].Weight != want[i].weight || got[i].Requirements.String() != want[i].reqs {
			t.Errorf("term %d = %d %v, want %d %s", i, got[i].Weight, got[i].Requirements, want[i].weight, want[i].reqs)
		}
	}
	for _, pod := range []*corev1.Pod{nil, podWith(nil, nil, nil), podWith(nil, []corev1.NodeSelectorTerm{{}}, nil)} {
		if got := PreferredTerms(pod); got != nil {
			t.Errorf("PreferredTerms without preferences = %v, want nil", got)
		}
	}
}

package protect

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIndexPDBsMatchesPodsBySelector(t *testing.T) {
	labelled := func(app string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Labels = map[string]string{"app": app} }
	}
	inNS := func(ns string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Namespace = ns } }
	pods := []*corev1.Pod{pod("web1"), pod("web2"), pod("db", labelled("db")), pod("away", inNS("other"))}
	selector := func(sel *metav1.LabelSelector) func(*policyv1.PodDisruptionBudget) {
		return func(b *policyv1.PodDisruptionBudget) { b.Spec.Selector = sel }
	}
	for _, tc := range []struct {
		name string
		pdb  *policyv1.PodDisruptionBudget
		want []string
	}{
		{"labels", pdb("b", 1), []string{"web1", "web2"}},
		{"empty selector matches the namespace", pdb("b", 1, selector(&metav1.LabelSelector{})), []string{"web1", "web2", "db"}},
		{"nil selector matches nothing", pdb("b", 1, selector(nil)), nil},
		{"expression", pdb("b", 1, selector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web"}}}})), []string{"db"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := index(t, []*policyv1.PodDisruptionBudget{tc.pdb}, pods)
			var got []string
			for _, p := range x.Pods("ns/b") {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("covered %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIndexPDBsReportsUnreadableSelector(t *testing.T) {
	bad := pdb("bad", 0, func(b *policyv1.PodDisruptionBudget) {
		b.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
	})
	x, err := IndexPDBs([]*policyv1.PodDisruptionBudget{bad, pdb("good", 1)}, []*corev1.Pod{pod("p")})
	if err == nil || !strings.Contains(err.Error(), "PodDisruptionBudget ns/bad: spec.selector") {
		t.Fatalf("error %v; want one naming ns/bad's selector", err)
	}
	if got := x.Covering(pod("p")); len(got) != 1 || got[0].Name != "good" {
		t.Errorf("covering %v; want only the readable PDB", got)
	}
}

func TestCheckTogetherAddsEvictionsPerPDB(t *testing.T) {
	onNode := func(n string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
	group := func(pods ...*corev1.Pod) []Candidate {
		byNode := map[string][]*corev1.Pod{}
		var names []string
		for _, p := range pods {
			if byNode[p.Spec.NodeName] == nil {
				names = append(names, p.Spec.NodeName)
			}
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
		var cs []Candidate
		for _, n := range names {
			cs = append(cs, Candidate{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, Pods: byNode[n]})
		}
		return cs
	}
	three := []*corev1.Pod{pod("a", onNode("n1")), pod("b", onNode("n1")), pod("c", onNode("n2"))}
	for _, tc := range []struct {
		name     string
		pods     []*corev1.Pod
		pdb      *policyv1.PodDisruptionBudget
		blockers string
		says     string
	}{
		{"within the budget", three, pdb("b", 3), "", ""},
		{"over the budget", three, pdb("b", 2), "PDBTogether",
			"draining these 2 nodes together would evict 3 pods covered by PodDisruptionBudget ns/b ([ns/a ns/b ns/c]), which allows 2 disruptions now"},
		{"a budget of none is each node's blocker", three, pdb("b", 0), "PDB,PDB,PDB", "pod ns/a"},
		{"unready pods that may go cost nothing", []*corev1.Pod{pod("a", onNode("n1")), pod("b", onNode("n2"), unready)}, pdb("b", 1, alwaysAllow), "", ""},
		{"pods held by do-not-disrupt are not evicted", []*corev1.Pod{pod("a", onNode("n1")), pod("b", onNode("n2"), annotated("true"))}, pdb("b", 1), "DoNotDisrupt", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := CheckTogether(group(tc.pods...), index(t, []*policyv1.PodDisruptionBudget{tc.pdb}, tc.pods), now)
			if kinds(v.Blockers) != tc.blockers {
				t.Fatalf("blockers %q, want %q\n%+v", kinds(v.Blockers), tc.blockers, v.Blockers)
			}
			if tc.says != "" && !strings.Contains(v.Blockers[0].Message, tc.says) {
				t.Errorf("message %q; want it to say %q", v.Blockers[0].Message, tc.says)
			}
		})
	}
}

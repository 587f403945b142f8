package protect

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// pdb covers app=web in ns and allows that many disruptions; opts change it.
func pdb(name string, allowed int32, opts ...func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
	b := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed,
			CurrentHealthy: 3, DesiredHealthy: 3 - allowed, ExpectedPods: 3},
	}
	for _, o := range opts {
		o(b)
	}
	return b
}

func alwaysAllow(b *policyv1.PodDisruptionBudget) {
	b.Spec.UnhealthyPodEvictionPolicy = new(policyv1.AlwaysAllow)
}

func healthy(current, desired int32) func(*policyv1.PodDisruptionBudget) {
	return func(b *policyv1.PodDisruptionBudget) {
		b.Status.CurrentHealthy, b.Status.DesiredHealthy = current, desired
	}
}

func index(t *testing.T, pdbs []*policyv1.PodDisruptionBudget, pods []*corev1.Pod) *PDBs {
	t.Helper()
	x, err := IndexPDBs(pdbs, pods)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// kinds lists the kinds of rs, to compare against a want written as
// "DoNotDisrupt,PDB".
func kinds(rs []Reason) string {
	var ks []string
	for _, r := range rs {
		ks = append(ks, string(r.Kind))
	}
	return strings.Join(ks, ",")
}

func TestCheckFindsWhatHoldsANode(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	dnd := func(v string) map[string]string { return map[string]string{karpv1.DoNotDisruptAnnotationKey: v} }
	otherNS := func(p *corev1.Pod) { p.Namespace = "other" }
	for _, tc := range []struct {
		name     string
		node     *corev1.Node
		claim    *karpv1.NodeClaim
		pods     []*corev1.Pod
		pdbs     []*policyv1.PodDisruptionBudget
		blockers string
		warnings string
		says     string
	}{
		{"nothing holds", node, nil, []*corev1.Pod{pod("p", annotated("10m"))}, []*policyv1.PodDisruptionBudget{pdb("b", 1)}, "", "", ""},
		{"node annotation", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: dnd("true")}}, nil, nil, nil,
			"DoNotDisrupt", "", `node n1 has karpenter.sh/do-not-disrupt: "true"`},
		{"NodeClaim annotation", nil, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1", Annotations: dnd("true")}}, nil, nil,
			"DoNotDisrupt", "", `NodeClaim c1 has`},
		{"node annotation not true warns", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: dnd("1h")}}, nil, nil, nil,
			"", "InvalidDoNotDisrupt", `node n1: karpenter.sh/do-not-disrupt "1h" is ignored`},
		{"pod annotation true", node, nil, []*corev1.Pod{pod("p", annotated("true"))}, nil, "DoNotDisrupt", "", `pod ns/p has karpenter.sh/do-not-disrupt: "true"`},
		{"pod annotation duration", node, nil, []*corev1.Pod{pod("p", annotated("2h"))}, nil, "DoNotDisrupt", "", "holds until 2024-01-02T13:00:00Z"},
		{"pod annotation invalid warns", node, nil, []*corev1.Pod{pod("p", annotated("yes"))}, nil, "", "InvalidDoNotDisrupt", "pod ns/p"},
		{"finished pod does not hold", node, nil, []*corev1.Pod{pod("p", annotated("true"), phase(corev1.PodSucceeded))}, nil, "", "", ""},
		{"terminating pod does not hold", node, nil, []*corev1.Pod{pod("p", annotated("true"), terminating)}, nil, "", "", ""},
		{"DaemonSet pod holds, as in Karpenter", node, nil, []*corev1.Pod{pod("p", annotated("true"), ownedBy("apps/v1", "DaemonSet"))}, nil, "DoNotDisrupt", "", ""},
		{"PDB allowing none", node, nil, []*corev1.Pod{pod("p")}, []*policyv1.PodDisruptionBudget{pdb("b", 0)},
			"PDB", "", "pod ns/p is covered by PodDisruptionBudget ns/b, which allows no disruption now (3 of 3 pods healthy, 3 wanted)"},
		{"PDB allowing one", node, nil, []*corev1.Pod{pod("p"), pod("q")}, []*policyv1.PodDisruptionBudget{pdb("b", 1)}, "", "", ""},
		{"PDB status of an old generation", node, nil, []*corev1.Pod{pod("p")}, []*policyv1.PodDisruptionBudget{pdb("b", 1, func(b *policyv1.PodDisruptionBudget) { b.Generation = 2 })},
			"PDB", "", "generation 1, not 2"},
		{"PDB covers a DaemonSet pod", node, nil, []*corev1.Pod{pod("p", ownedBy("apps/v1", "DaemonSet"))}, []*policyv1.PodDisruptionBudget{pdb("b", 0)}, "PDB", "", ""},
		{"PDB ignores pods tolerating the disrupted taint", node, nil,
			[]*corev1.Pod{pod("p", tolerates(corev1.Toleration{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule, Operator: corev1.TolerationOpExists}))},
			[]*policyv1.PodDisruptionBudget{pdb("b", 0)}, "", "", ""},
		{"PDB ignores mirror pods", node, nil, []*corev1.Pod{pod("p", ownedBy("v1", "Node"))}, []*policyv1.PodDisruptionBudget{pdb("b", 0)}, "", "", ""},
		{"PDB ignores pending pods", node, nil, []*corev1.Pod{pod("p", phase(corev1.PodPending))}, []*policyv1.PodDisruptionBudget{pdb("b", 0)}, "", "", ""},
		{"PDB of another namespace", node, nil, []*corev1.Pod{pod("p", otherNS)}, []*policyv1.PodDisruptionBudget{pdb("b", 0)}, "", "", ""},
		{"do-not-disrupt pod is not also a PDB blocker", node, nil, []*corev1.Pod{pod("p", annotated("true"))}, []*policyv1.PodDisruptionBudget{pdb("b", 0)}, "DoNotDisrupt", "", ""},
		{"unready pod under AlwaysAllow", node, nil, []*corev1.Pod{pod("p", unready)}, []*policyv1.PodDisruptionBudget{pdb("b", 0, alwaysAllow)}, "", "", ""},
		{"unready pod of a healthy PDB", node, nil, []*corev1.Pod{pod("p", unready)}, []*policyv1.PodDisruptionBudget{pdb("b", 0, healthy(2, 2))}, "", "", ""},
		{"unready pod of an unhealthy PDB", node, nil, []*corev1.Pod{pod("p", unready)}, []*policyv1.PodDisruptionBudget{pdb("b", 0, healthy(1, 2))}, "PDB", "", ""},
		{"unready pod of a PDB wanting none healthy", node, nil, []*corev1.Pod{pod("p", unready)}, []*policyv1.PodDisruptionBudget{pdb("b", 0, healthy(0, 0))}, "PDB", "", ""},
		{"two PDBs on one pod", node, nil, []*corev1.Pod{pod("p")}, []*policyv1.PodDisruptionBudget{pdb("a", 5), pdb("b", 5)},
			"MultiplePDBs", "", "pod ns/p is covered by 2 PodDisruptionBudgets (ns/a, ns/b)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(Candidate{Node: tc.node, Claim: tc.claim, Pods: tc.pods}, index(t, tc.pdbs, tc.pods), now)
			if kinds(v.Blockers) != tc.blockers || kinds(v.Warnings) != tc.warnings {
				t.Fatalf("blockers %q, warnings %q; want %q, %q\n%+v", kinds(v.Blockers), kinds(v.Warnings), tc.blockers, tc.warnings, v)
			}
			all := append(v.Blockers, v.Warnings...)
			if tc.says != "" && !strings.Contains(all[0].Message, tc.says) {
				t.Errorf("message %q; want it to say %q", all[0].Message, tc.says)
			}
			for _, r := range all {
				if r.Node == "" {
					t.Errorf("reason %q names no node", r.Message)
				}
			}
		})
	}
}

func TestVerdictUntilIsWhenAllBlockersLapse(t *testing.T) {
	timed := Check(Candidate{Pods: []*corev1.Pod{pod("p", annotated("2h")), pod("q", annotated("3h"))}}, nil, now)
	if until, ok := timed.Until(); !ok || !until.Equal(now.Add(2*time.Hour)) {
		t.Errorf("Until = %v, %v; want %v, when the later hold (q's) ends", until, ok, now.Add(2*time.Hour))
	}
	forever := Check(Candidate{Pods: []*corev1.Pod{pod("p", annotated("2h")), pod("q", annotated("true"))}}, nil, now)
	if _, ok := forever.Until(); ok {
		t.Error("an indefinite blocker has no end")
	}
}

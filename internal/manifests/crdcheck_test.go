package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A NodePool the API server would refuse is refused on load too, with the
// field named; before, simulate read such a file and simulated something
// else (an invalid budget stopped every disruption, a misspelt field was
// matched regardless of case).
func TestCRDChecksRefuseWhatTheAPIServerRefuses(t *testing.T) {
	const pool = `apiVersion: nodewright.dev/v1alpha1
kind: KWOKNodeClass
metadata: {name: c}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: p}
spec:
  template:
    spec:
      nodeClassRef: {group: nodewright.dev, kind: KWOKNodeClass, name: c}
      requirements: [{key: kubernetes.io/arch, operator: %s, values: [amd64]}]
  disruption:
%s`
	cases := []struct {
		name, operator, disruption string
		want                       string // in the problem; "" for none
	}{
		{name: "valid", operator: "In", disruption: "    consolidateAfter: 5m\n    budgets: [{nodes: \"10%\"}]\n"},
		{name: "budget over 100%", operator: "In", disruption: "    budgets: [{nodes: \"150%\"}]\n", want: "spec.disruption.budgets[0].nodes"},
		{name: "budget a word", operator: "In", disruption: "    budgets: [{nodes: ten}]\n", want: "spec.disruption.budgets[0].nodes"},
		{name: "duration without schedule", operator: "In", disruption: "    budgets: [{nodes: \"1\", duration: 10m}]\n", want: "'schedule' must be set with 'duration'"},
		{name: "bad reason", operator: "In", disruption: "    budgets: [{nodes: \"1\", reasons: [Drift]}]\n", want: "spec.disruption.budgets[0].reasons[0]"},
		{name: "consolidateAfter a word", operator: "In", disruption: "    consolidateAfter: banana\n", want: "spec.disruption.consolidateAfter"},
		{name: "policy misspelt", operator: "In", disruption: "    consolidationPolicy: WhenEmptyOrUnderutilised\n", want: "spec.disruption.consolidationPolicy"},
		{name: "field name in the wrong case", operator: "In", disruption: "    consolidateafter: 5m\n", want: "spec.disruption.consolidateafter: unknown field"},
		{name: "operator misspelt", operator: "Inn", disruption: "    consolidateAfter: 5m\n", want: "spec.template.spec.requirements[0].operator"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			doc := sprintf(pool, tc.operator, tc.disruption)
			if err := os.WriteFile(filepath.Join(dir, "pool.yaml"), []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			set, problems := Load(dir)
			if tc.want == "" {
				if len(problems) > 0 || set.NodePool("p") == nil {
					t.Fatalf("a valid NodePool was refused: %s", list(problems))
				}
				return
			}
			if set.NodePool("p") != nil {
				t.Errorf("the NodePool was kept")
			}
			found := false
			for _, p := range problems {
				found = found || (p.Kind == "NodePool" && strings.Contains(p.Message, tc.want) && strings.Contains(p.Message, "the API server would refuse"))
			}
			if !found {
				t.Errorf("no problem naming %q; problems:\n%s", tc.want, list(problems))
			}
		})
	}
}

package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const ec2Pool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %s}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: %s}
      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
`

const ec2Class = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: %s}
spec:
  role: r
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
%s`

func sprintf(format string, args ...string) string {
	out := format
	for _, a := range args {
		out = strings.Replace(out, "%s", a, 1)
	}
	return out
}

// TestEC2NodeClasses loads NodePools on EC2NodeClasses: good classes are
// kept with the API server's defaults; a class the API server would refuse
// is refused with the field named (the CRD's own checks), and so is a
// NodePool on it.
func TestEC2NodeClasses(t *testing.T) {
	docs := []string{
		sprintf(ec2Class, "good", "  amiSelectorTerms: [{alias: bottlerocket@latest}]\n  kubelet: {maxPods: 50, evictionHard: {memory.available: 5%}}\n"),
		sprintf(ec2Pool, "good", "good"),
		sprintf(ec2Class, "nofamily", "  amiSelectorTerms: [{id: ami-0123456789abcdef0}]\n"),
		sprintf(ec2Pool, "on-nofamily", "nofamily"),
		sprintf(ec2Class, "badkubelet", "  amiSelectorTerms: [{alias: al2023@latest}]\n  kubelet: {systemReserved: {cpu: lots}}\n"),
		sprintf(ec2Pool, "on-badkubelet", "badkubelet"),
		sprintf(ec2Pool, "on-missing", "missing"),
		"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: on-azure}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.azure.com, kind: AKSNodeClass, name: x}\n      requirements: []\n",
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	set, problems := Load(dir)
	if len(set.EC2NodeClasses) != 1 || set.EC2NodeClass("good") == nil || len(set.NodePools) != 1 || set.NodePool("good") == nil {
		t.Fatalf("kept %d classes, %d pools; want only the good ones (problems: %s)", len(set.EC2NodeClasses), len(set.NodePools), list(problems))
	}
	if got := set.EC2NodeClass("good").Spec.MetadataOptions; got == nil || got.HTTPTokens == nil || *got.HTTPTokens != "required" {
		t.Errorf("metadataOptions not defaulted as the API server does: %+v", got)
	}
	want := map[string]string{
		"EC2NodeClass nofamily":   "must specify amiFamily if amiSelectorTerms does not contain an alias",
		"NodePool on-nofamily":    "names EC2NodeClass nofamily, which is not in the input or was refused",
		"EC2NodeClass badkubelet": "spec.kubelet.systemReserved.cpu: Invalid value: \"lots\"",
		"NodePool on-badkubelet":  "names EC2NodeClass badkubelet",
		"NodePool on-missing":     "names EC2NodeClass missing",
		"NodePool on-azure":       "AKSNodeClass",
	}
	for _, p := range problems {
		key := p.Kind + " " + p.Name
		if w, ok := want[key]; ok && strings.Contains(p.Message, w) {
			delete(want, key)
		}
	}
	for key, w := range want {
		t.Errorf("%s: no problem saying %q; problems:\n%s", key, w, list(problems))
	}
}

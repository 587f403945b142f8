package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileReplacesBaseObject: an object of a file replaces the base's
// object of the same kind, namespace and name with no problem reported,
// while base objects go through the same checks as a file's.
func TestFileReplacesBaseObject(t *testing.T) {
	base := Base{Origin: "cluster test", Docs: [][]byte{
		[]byte(`{"apiVersion":"nodewright.dev/v1alpha1","kind":"KWOKNodeClass","metadata":{"name":"default"}}`),
		[]byte(`{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"general","labels":{"from":"cluster"}},` +
			`"spec":{"template":{"spec":{"nodeClassRef":{"group":"nodewright.dev","kind":"KWOKNodeClass","name":"default"},"requirements":[]}}}}`),
		[]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop"},"spec":{"containers":[{"name":"c","image":"web"}]}}`),
		[]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad","namespace":"shop"},"spec":{"containers":[]}}`),
	}}
	file := filepath.Join(t.TempDir(), "pool.yaml")
	if err := os.WriteFile(file, []byte(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general, labels: {from: file}}
spec:
  template:
    spec:
      nodeClassRef: {group: nodewright.dev, kind: KWOKNodeClass, name: default}
      requirements: []
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: other}
spec: {containers: [{name: c, image: web}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	set, problems := LoadOnto(base, file)
	if len(set.NodePools) != 1 || set.NodePools[0].Labels["from"] != "file" {
		t.Errorf("NodePools %v; want the file's general alone", set.NodePools)
	}
	if len(set.Pods) != 2 {
		t.Errorf("%d pods; want shop/web from the base and other/web from the file", len(set.Pods))
	}
	if len(problems) != 1 || problems[0].File != "cluster test" || !strings.Contains(problems[0].Message, "containers is empty") {
		t.Errorf("problems %v; want the base's pod without containers, named by the base's origin", problems)
	}
	if len(set.Files) != 1 || set.Files[0] != file {
		t.Errorf("files %v; want the file alone", set.Files)
	}
}

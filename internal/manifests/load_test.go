package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func TestLoad(t *testing.T) {
	cases := []struct {
		name  string
		paths []string
		// counts by kind that must hold
		counts map[string]int
		// problems, each a list of substrings one problem must hold
		problems [][]string
	}{
		{
			name:   "directory read recursively with lists, JSON and empty documents",
			paths:  []string{"testdata/good"},
			counts: map[string]int{"NodePool": 1, "KWOKNodeClass": 1, "Deployment": 2, "Job": 1, "Pod": 3 + 2 + 1},
		},
		{
			name:   "a file named directly",
			paths:  []string{"testdata/good/pools.yaml"},
			counts: map[string]int{"NodePool": 1, "KWOKNodeClass": 1, "Pod": 0},
		},
		{
			name:   "bad objects are reported and skipped, good ones kept",
			paths:  []string{"testdata/bad"},
			counts: map[string]int{"NodePool": 0, "NodeClaim": 0, "Pod": 1},
			problems: [][]string{
				{"malformed.yaml", "not valid YAML"},
				{"references.yaml", "NodePool orphan", "KWOKNodeClass missing", "not in the input"},
				{"references.yaml", "NodeClaim orphan-abcde", "NodePool orphan"},
				{"references.yaml", "Pod default/typo", "unknown field", "contaners"},
				{"references.yaml", "Pod default/empty", "containers is empty"},
				{"references.yaml", "Pod default/fine", "node gone", "simulated as pending"},
				{"unknown.yaml", "ConfigMap default/settings", "not something the simulator reads"},
			},
		},
		{
			name:     "a missing path",
			paths:    []string{"testdata/nope"},
			problems: [][]string{{"testdata/nope", "cannot read"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, problems := Load(tc.paths...)
			objs := set.Objects()
			for kind, want := range tc.counts {
				if objs[kind] != want {
					t.Errorf("%s: got %d, want %d", kind, objs[kind], want)
				}
			}
			if len(problems) != len(tc.problems) {
				t.Errorf("got %d problems, want %d:\n%s", len(problems), len(tc.problems), list(problems))
			}
			for _, want := range tc.problems {
				if !anyHolds(problems, want) {
					t.Errorf("no problem holds %q; problems:\n%s", want, list(problems))
				}
			}
		})
	}
}

func list(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}

func anyHolds(ps []Problem, subs []string) bool {
	for _, p := range ps {
		s, all := p.String(), true
		for _, sub := range subs {
			all = all && strings.Contains(s, sub)
		}
		if all {
			return true
		}
	}
	return false
}

func TestLoadAppliesAPIDefaults(t *testing.T) {
	set, problems := Load("testdata/good")
	if len(problems) > 0 {
		t.Fatalf("problems: %s", list(problems))
	}
	np := set.NodePool("default")
	d := np.Spec.Disruption
	if d.ConsolidateAfter.Duration != nil {
		t.Errorf("consolidateAfter: Never became %v", d.ConsolidateAfter)
	}
	if d.ConsolidationPolicy != karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized {
		t.Errorf("consolidationPolicy defaulted to %q", d.ConsolidationPolicy)
	}
	if len(d.Budgets) != 1 || d.Budgets[0].Nodes != "10%" {
		t.Errorf("budgets defaulted to %+v", d.Budgets)
	}
	if e := np.Spec.Template.Spec.ExpireAfter.Duration; e == nil || e.String() != "720h0m0s" {
		t.Errorf("expireAfter defaulted to %v", np.Spec.Template.Spec.ExpireAfter)
	}
	if set.NodeClass("default").Spec.Image != "kwok-image-v1" {
		t.Errorf("image defaulted to %q", set.NodeClass("default").Spec.Image)
	}
	if np.UID == "" {
		t.Error("NodePool got no UID")
	}
}

func TestWorkloadsExpandToOwnedPendingPods(t *testing.T) {
	set, _ := Load("testdata/good")
	byOwner := map[string][]*corev1.Pod{}
	for _, p := range set.Pods {
		ref := metav1.GetControllerOf(p)
		owner := "none"
		if ref != nil {
			owner = ref.Kind + "/" + ref.Name
		}
		byOwner[owner] = append(byOwner[owner], p)
	}
	tests := []struct {
		owner    string
		n        int
		duration string
	}{
		{"ReplicaSet/web-sim", 3, ""},
		{"Job/build", 2, "10m"},
		{"none", 1, ""}, // api's own pod: api is not expanded again
		{"ReplicaSet/api-sim", 0, ""},
	}
	for _, tc := range tests {
		pods := byOwner[tc.owner]
		if len(pods) != tc.n {
			t.Errorf("%s: %d pods, want %d", tc.owner, len(pods), tc.n)
			continue
		}
		for _, p := range pods {
			if tc.owner != "none" && (p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending) {
				t.Errorf("%s: pod %s is not pending", tc.owner, p.Name)
			}
			if p.Annotations[DurationAnnotation] != tc.duration {
				t.Errorf("%s: pod %s duration %q, want %q", tc.owner, p.Name, p.Annotations[DurationAnnotation], tc.duration)
			}
		}
	}
	if p := byOwner["Job/build"]; len(p) > 0 && p[0].Namespace != "ci" {
		t.Errorf("job pod namespace %q", p[0].Namespace)
	}
}

func TestLimitsWithoutRequestsBecomeRequests(t *testing.T) {
	dir := t.TempDir()
	doc := `apiVersion: apps/v1
kind: Deployment
metadata: {name: gpu}
spec:
  replicas: 1
  selector: {matchLabels: {app: gpu}}
  template:
    metadata: {labels: {app: gpu}}
    spec:
      containers:
      - name: c
        image: x
        resources:
          limits: {nvidia.com/gpu: "1", cpu: "2"}
          requests: {cpu: "1"}
---
apiVersion: v1
kind: Pod
metadata: {name: solo}
spec:
  containers:
  - name: c
    image: x
    resources: {limits: {memory: 1Gi}}
`
	if err := os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	set, problems := Load(dir)
	if len(problems) > 0 {
		t.Fatalf("problems: %s", list(problems))
	}
	for _, p := range set.Pods {
		r := p.Spec.Containers[0].Resources.Requests
		switch p.Name {
		case "solo":
			if r.Memory().String() != "1Gi" {
				t.Errorf("solo requests %v, want memory 1Gi from its limit", r)
			}
		default:
			if g := r["nvidia.com/gpu"]; g.String() != "1" || r.Cpu().String() != "1" {
				t.Errorf("%s requests %v, want nvidia.com/gpu 1 from the limit and cpu 1 as requested", p.Name, r)
			}
		}
	}
	if len(set.Pods) != 2 {
		t.Errorf("%d pods, want 2", len(set.Pods))
	}
}

// Files are read in the order -f named them: "the first one is used" of an
// object defined twice is the one of the first path, and the problem names
// the later file (they were sorted by name, so -f z.yaml -f a.yaml used
// a.yaml's).
func TestFilesAreReadInTheOrderGiven(t *testing.T) {
	dir := t.TempDir()
	class := "apiVersion: nodewright.dev/v1alpha1\nkind: KWOKNodeClass\nmetadata: {name: c}\n---\n"
	pool := func(arch string) string {
		return class + sprintf(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: p}
spec:
  template:
    spec:
      nodeClassRef: {group: nodewright.dev, kind: KWOKNodeClass, name: c}
      requirements: [{key: kubernetes.io/arch, operator: In, values: [%s]}]
`, arch)
	}
	z, a := filepath.Join(dir, "z.yaml"), filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(z, []byte(pool("arm64")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte(pool("amd64")), 0o644); err != nil {
		t.Fatal(err)
	}
	set, problems := Load(z, a)
	np := set.NodePool("p")
	if np == nil {
		t.Fatalf("no NodePool kept: %s", list(problems))
	}
	if got := np.Spec.Template.Spec.Requirements[0].Values[0]; got != "arm64" {
		t.Errorf("kept the NodePool of %s, want z.yaml's (arm64), the first given", got)
	}
	found := false
	for _, p := range problems {
		found = found || (p.Kind == "NodePool" && p.File == a && strings.Contains(p.Message, "defined twice"))
	}
	if !found {
		t.Errorf("no problem naming a.yaml's NodePool as the second definition:\n%s", list(problems))
	}
}

// TestDuplicateProblemsNameTheirFile: with one NodePool in two files, a
// problem with the first is pinned to the first file (it named the last
// file read), and the second is reported as defined twice, not used in
// the first's place without a word.
func TestDuplicateProblemsNameTheirFile(t *testing.T) {
	dir := t.TempDir()
	pool := func(class string) string {
		return sprintf(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: p}
spec:
  template:
    spec:
      nodeClassRef: {group: nodewright.dev, kind: KWOKNodeClass, name: %s}
      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
`, class)
	}
	bad, good := filepath.Join(dir, "bad.yaml"), filepath.Join(dir, "good.yaml")
	class := "apiVersion: nodewright.dev/v1alpha1\nkind: KWOKNodeClass\nmetadata: {name: c}\n---\n"
	if err := os.WriteFile(bad, []byte(class+pool("typo")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte(pool("c")), 0o644); err != nil {
		t.Fatal(err)
	}
	set, problems := Load(bad, good)
	if np := set.NodePool("p"); np != nil {
		t.Errorf("kept the NodePool of the second file in place of the refused first one")
	}
	want := map[string]string{
		bad:  "names KWOKNodeClass typo",
		good: "defined twice; keep one of the two (the first, in " + bad + ", was refused, and neither is used)",
	}
	for file, msg := range want {
		found := false
		for _, p := range problems {
			found = found || (p.Kind == "NodePool" && p.File == file && strings.Contains(p.Message, msg))
		}
		if !found {
			t.Errorf("no NodePool problem in %s saying %q:\n%s", file, msg, list(problems))
		}
	}
}

package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A quantity that does not parse is reported with the object, the file,
// the field's path and value, and what a quantity looks like; before, the
// problem said only "unable to parse quantity's suffix", or quoted the
// parser's regular expression, and the user had to hunt for the field.
func TestBadQuantityNamesTheField(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		// want are substrings of the one problem's String(); nil for an
		// object that loads.
		want []string
	}{
		{
			name: "pod request",
			doc: `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: c, image: c, resources: {requests: {cpu: 500mm}}}`,
			want: []string{"Pod default/p", `spec.containers[0].resources.requests.cpu: "500mm" is not a quantity`},
		},
		{
			name: "deployment template, second container, every bad field",
			doc: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: a, image: a}
      - {name: b, image: b, resources: {limits: {memory: 2GB}, requests: {memory: "1 Gi"}}}`,
			want: []string{"Deployment shop/web",
				`spec.template.spec.containers[1].resources.limits.memory: "2GB" is not a quantity`,
				`spec.template.spec.containers[1].resources.requests.memory: "1 Gi" is not a quantity`},
		},
		{
			name: "job init container, extended resource bracketed",
			doc: `apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  template:
    spec:
      restartPolicy: Never
      initContainers:
      - {name: i, image: i, resources: {limits: {nvidia.com/gpu: one}}}
      containers:
      - {name: c, image: c}`,
			want: []string{"Job ml/train", `spec.template.spec.initContainers[0].resources.limits[nvidia.com/gpu]: "one" is not a quantity`},
		},
		{
			name: "pod overhead",
			doc: `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: batch}
spec:
  overhead: {cpu: -1.5e}
  containers:
  - {name: c, image: c}`,
			want: []string{"Pod batch/p", `spec.overhead.cpu: "-1.5e" is not a quantity`},
		},
		{
			name: "persistent volume claim",
			doc: `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  resources: {requests: {storage: 10 GiB}}`,
			want: []string{"PersistentVolumeClaim default/data", `spec.resources.requests.storage: "10 GiB" is not a quantity`},
		},
		{
			name: "valid quantities, numbers included",
			doc: `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: c, image: c, resources: {requests: {cpu: 0.5, memory: 512Mi}, limits: {cpu: 2, memory: 1e9}}}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "objects.yaml")
			if err := os.WriteFile(file, []byte(tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, problems := Load(file)
			if tc.want == nil {
				if len(problems) > 0 {
					t.Fatalf("valid quantities refused:\n%s", list(problems))
				}
				return
			}
			if len(problems) != 1 {
				t.Fatalf("got %d problems, want 1:\n%s", len(problems), list(problems))
			}
			got := problems[0].String()
			// The file, then what a valid quantity looks like.
			for _, w := range append(tc.want, file+": ", `such as "500m" or "2" for CPU and "512Mi"`) {
				if !strings.Contains(got, w) {
					t.Errorf("the problem lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

// A decode error that is not about a quantity keeps the decoder's message,
// which names the field itself.
func TestOtherDecodeErrorsKeepTheirMessage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d.yaml")
	doc := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: two
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: c}]}`
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, problems := Load(file)
	if len(problems) != 1 || !strings.Contains(problems[0].Message, "spec.replicas") || strings.Contains(problems[0].Message, "quantity") {
		t.Fatalf("want one problem naming spec.replicas, not a quantity:\n%s", list(problems))
	}
}

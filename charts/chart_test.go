package charts

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/config/crd"
)

// TestLint runs `helm lint`'s rules on both charts, with the default values
// and with a Karpenter user's: an error-severity message fails.
func TestLint(t *testing.T) {
	cases := []struct {
		name, chart, values, namespace string
	}{
		{"defaults", mainChart, "", releaseNamespace},
		{"karpenter values", mainChart, karpenterValues, karpenterNamespace},
		{"crd chart", crdChart, "", releaseNamespace},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vals, err := chartutil.ReadValues([]byte(tc.values))
			if err != nil {
				t.Fatal(err)
			}
			l := lint.All(tc.chart, vals, tc.namespace, false)
			for _, m := range l.Messages {
				if m.Severity >= support.ErrorSev {
					t.Errorf("lint: %s", m)
				} else {
					t.Logf("lint: %s", m)
				}
			}
		})
	}
}

// TestCRDsMatchConfig fails when the charts' CRDs are not byte for byte
// those of config/crd, which `make generate` writes along with them.
func TestCRDsMatchConfig(t *testing.T) {
	want := map[string][]byte{}
	names, err := fs.Glob(crd.FS, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := fs.ReadFile(crd.FS, n)
		if err != nil {
			t.Fatal(err)
		}
		want[n] = b
	}
	if len(want) == 0 {
		t.Fatal("no CRDs in config/crd")
	}
	// Every file of these folders must be a CRD: the crd chart's templates
	// are its CRDs and nothing else, and Helm reads all of crds/.
	for _, dir := range []string{filepath.Join(mainChart, "crds"), filepath.Join(crdChart, "templates")} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, e := range entries {
			have[e.Name()] = true
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if w, ok := want[e.Name()]; !ok {
				t.Errorf("%s/%s is not in config/crd; run `make generate`", dir, e.Name())
			} else if !bytes.Equal(b, w) {
				t.Errorf("%s/%s differs from config/crd/%s; run `make generate`", dir, e.Name(), e.Name())
			}
		}
		for n := range want {
			if !have[n] {
				t.Errorf("%s lacks config/crd/%s; run `make generate`", dir, n)
			}
		}
	}
}

// TestDefaultsMatchManifests renders the chart with its default values as
// release nodewright in namespace nodewright and compares each object with
// its counterpart in config/rbac and config/deploy: the same args, env,
// ports, probes, security contexts, affinity, resources, RBAC rules and
// bindings. The differences that must exist are in normalizeChart.
func TestDefaultsMatchManifests(t *testing.T) {
	r, err := render(mainChart, "", releaseName, releaseNamespace)
	if err != nil {
		t.Fatal(err)
	}
	want, err := manifests()
	if err != nil {
		t.Fatal(err)
	}
	compareWithManifests(t, r.objects, want)
}

// compareWithManifests fails for each object of want that got lacks or
// holds differently after normalization, and for each object of got that
// want lacks.
func compareWithManifests(t *testing.T, got, want []client.Object) {
	t.Helper()
	byKey := map[string]client.Object{}
	for _, o := range got {
		byKey[key(o)] = o
	}
	for _, w := range want {
		k := key(w)
		g, ok := byKey[k]
		if !ok {
			t.Errorf("the chart has no %s", k)
			continue
		}
		delete(byKey, k)
		c, m := g.DeepCopyObject().(client.Object), w.DeepCopyObject().(client.Object)
		if err := normalizeChart(c, m); err != nil {
			t.Error(err)
			continue
		}
		// TypeMeta is empty in objects read back from an API server.
		c.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		m.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		if d := cmp.Diff(strings.Split(toYAML(m), "\n"), strings.Split(toYAML(c), "\n")); d != "" {
			t.Errorf("%s differs from the manifest's (-manifest +chart):\n%s", k, d)
		}
	}
	for k := range byKey {
		t.Errorf("the chart has %s, which config/rbac and config/deploy lack", k)
	}
}

// TestKarpenterValues renders the chart with a Karpenter user's values and
// finds each value where it belongs.
func TestKarpenterValues(t *testing.T) {
	r, err := render(mainChart, karpenterValues, karpenterRelease, karpenterNamespace)
	if err != nil {
		t.Fatal(err)
	}
	runChecks(t, r.objects, true)
	if err := notesName(r.notes, ignoredKarpenterValues); err != nil {
		t.Error(err)
	}
	if strings.Contains(r.notes, "spotToSpotConsolidation") {
		t.Errorf("NOTES.txt names spotToSpotConsolidation, which nodewright honours:\n%s", r.notes)
	}
}

func runChecks(t *testing.T, objs []client.Object, rendered bool) {
	t.Helper()
	for _, c := range karpenterChecks {
		if c.renderOnly && !rendered {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			got, err := c.got(objs)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, c.want) {
				t.Errorf("got\n%swant\n%s", toYAML(got), toYAML(c.want))
			}
		})
	}
}

// TestSettingArgs: a setting becomes a flag when it is set, and only then;
// zero is a value, an empty string or null is not, false is the default.
func TestSettingArgs(t *testing.T) {
	cases := []struct {
		name, values string
		want         []string
	}{
		{"defaults", "", nil},
		{"empty and null", "settings: {clusterName: '', vmMemoryOverheadPercent: null, reservedENIs: ''}", nil},
		{"zeros are values", "settings: {vmMemoryOverheadPercent: 0, reservedENIs: 0}",
			[]string{"--vm-memory-overhead-percent=0", "--reserved-enis=0"}},
		{"false booleans", "settings: {isolatedVPC: false, featureGates: {spotToSpotConsolidation: false}}", nil},
		{"booleans as strings", "settings: {isolatedVPC: 'true', featureGates: {spotToSpotConsolidation: 'true'}}",
			[]string{"--isolated-vpc=true", "--spot-to-spot-consolidation=true"}},
		{"no featureGates", "settings: {featureGates: null}", nil},
		{"durations", "settings: {batchMaxDuration: 1m, batchIdleDuration: 500ms}",
			[]string{"--batch-max-duration=1m", "--batch-idle-duration=500ms"}},
		{"a value with spaces and quotes", `settings: {clusterName: 'a "b" c'}`, []string{`--cluster-name=a "b" c`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := render(mainChart, tc.values, releaseName, releaseNamespace)
			if err != nil {
				t.Fatal(err)
			}
			d, err := only[*appsv1.Deployment](r.objects)
			if err != nil {
				t.Fatal(err)
			}
			args := d.Spec.Template.Spec.Containers[0].Args
			i := slices.Index(args, "--cloud-provider=kwok")
			if i < 0 {
				t.Fatalf("no --cloud-provider=kwok in %q", args)
			}
			if got := args[i+1:]; !slices.Equal(got, tc.want) {
				t.Errorf("setting args %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRefusedValues: values the controller would refuse when it starts are
// refused at install, with a message naming the value.
func TestRefusedValues(t *testing.T) {
	cases := []struct{ values, want string }{
		{"settings: {cloudProvider: aws}", "settings.clusterName is required with settings.cloudProvider=aws"},
		{"settings: {cloudProvider: gce}", `settings.cloudProvider "gce": use kwok or aws`},
		{"logLevel: verbose", `logLevel "verbose": use debug, info or error`},
		{"settings: {preferencePolicy: respect}", `settings.preferencePolicy "respect": use Respect or Ignore`},
		{"settings: {minValuesPolicy: Lenient}", `settings.minValuesPolicy "Lenient": use Strict or BestEffort`},
	}
	for _, tc := range cases {
		t.Run(tc.values, func(t *testing.T) {
			_, err := render(mainChart, tc.values, releaseName, releaseNamespace)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

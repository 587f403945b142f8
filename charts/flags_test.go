package charts

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/nodewright/nodewright/internal/testcluster"
)

// TestRenderedArgsParse runs `nodewright controller ARGS --help`, with the
// binary built from this tree, for the args the chart renders with its
// defaults and with a Karpenter user's values: cobra parses every flag
// before it prints help, so a flag the controller lacks, or a value of the
// wrong type, fails here. It also checks that the arguments the comparison
// with config/deploy leaves out (defaultArgs) are the flags' defaults.
func TestRenderedArgsParse(t *testing.T) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "nodewright")
	build := exec.Command("go", "build", "-o", bin, "./cmd/nodewright")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building nodewright: %v\n%s", err, out)
	}
	help, err := exec.Command(bin, "controller", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("nodewright controller --help: %v\n%s", err, help)
	}
	for _, a := range defaultArgs {
		flag, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		re := regexp.MustCompile(fmt.Sprintf(`(?m)^\s+--%s string .*\(default "%s"\)$`, regexp.QuoteMeta(flag), regexp.QuoteMeta(value)))
		if !re.Match(help) {
			t.Errorf("%s is not the default of --%s in `nodewright controller --help`", a, flag)
		}
	}
	for _, tc := range []struct{ name, values, release, namespace string }{
		{"defaults", "", releaseName, releaseNamespace},
		{"karpenter values", karpenterValues, karpenterRelease, karpenterNamespace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := render(mainChart, tc.values, tc.release, tc.namespace)
			if err != nil {
				t.Fatal(err)
			}
			d, err := only[*appsv1.Deployment](r.objects)
			if err != nil {
				t.Fatal(err)
			}
			args := d.Spec.Template.Spec.Containers[0].Args
			if out, err := exec.Command(bin, append(args, "--help")...).CombinedOutput(); err != nil {
				t.Errorf("nodewright refuses the chart's args %q: %v\n%s", args, err, firstLines(out, 5))
			}
		})
	}
}

func firstLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

package crd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/internal/testcluster"
)

// allowedDifference is a deliberate, documented departure from Karpenter's schema
// (see docs/extensions.md). Anything else that differs fails the test.
type allowedDifference struct {
	file, path, keyword, why string
}

var allowed = []allowedDifference{
	{"karpenter.sh_nodeoverlays.yaml", ".spec.capacity", "x-kubernetes-validations",
		"nodewright's NodeOverlay may also override cpu, memory and pods"},
	{"karpenter.sh_nodepools.yaml", ".spec.disruption.budgets[].schedule", "x-kubernetes-validations",
		"nodewright refuses budget schedules that no cron parser accepts"},
	{"karpenter.sh_nodepools.yaml", ".spec.template.spec.nodeClassRef.group", "pattern",
		"accepts group/version, as Karpenter's own windows-custom-userdata example writes it"},
	{"karpenter.sh_nodeclaims.yaml", ".spec.nodeClassRef.group", "pattern",
		"accepts group/version, as the NodePool does"},
	{"karpenter.sh_nodepools.yaml", ".spec.disruption.budgets[].schedule", "maxLength",
		"bounds the cost of the cron rule above"},
}

func isAllowed(file, path, keyword string) bool {
	for _, a := range allowed {
		if a.file == file && a.path == path && a.keyword == keyword {
			return true
		}
	}
	return false
}

// TestSchemasMatchKarpenter checks that every property path of Karpenter's CRDs,
// core's (karpenter.sh) and the AWS provider's (karpenter.k8s.aws), exists in
// ours with the same type, defaults, enum and validation.
func TestSchemasMatchKarpenter(t *testing.T) {
	compat, err := testcluster.CompatDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []struct{ dir, glob string }{
		{"karpenter-crds", "karpenter.sh_*.yaml"},
		{"karpenter-aws-crds", "karpenter.k8s.aws_*.yaml"},
	} {
		t.Run(set.dir, func(t *testing.T) {
			compatDir := filepath.Join(compat, set.dir)
			theirs := loadDir(t, compatDir, set.glob)
			ours := loadDir(t, ".", set.glob)
			if len(theirs) == 0 {
				t.Fatalf("no Karpenter CRDs found under %s", compatDir)
			}
			for file, want := range theirs {
				got, ok := ours[file]
				if !ok {
					t.Errorf("%s: Karpenter has this CRD, we do not", file)
					continue
				}
				for _, d := range compareCRD(file, want, got) {
					t.Error(d)
				}
			}
		})
	}
}

// compareCRD returns every difference between two CRD documents that is not
// allowed: names, scope, versions, printer columns, subresources and schemas.
func compareCRD(file string, want, got map[string]any) []string {
	var diffs []string
	ws, gs := want["spec"].(map[string]any), got["spec"].(map[string]any)
	for _, k := range []string{"group", "names", "scope"} {
		if !reflect.DeepEqual(ws[k], gs[k]) {
			diffs = append(diffs, fmt.Sprintf("%s: spec.%s is %v, Karpenter has %v", file, k, gs[k], ws[k]))
		}
	}
	wvs, gvs := ws["versions"].([]any), gs["versions"].([]any)
	for _, wv := range wvs {
		wm := wv.(map[string]any)
		var gm map[string]any
		for _, gv := range gvs {
			if gv.(map[string]any)["name"] == wm["name"] {
				gm = gv.(map[string]any)
			}
		}
		if gm == nil {
			diffs = append(diffs, fmt.Sprintf("%s: version %v missing", file, wm["name"]))
			continue
		}
		for _, k := range []string{"served", "storage", "subresources", "additionalPrinterColumns"} {
			if !reflect.DeepEqual(wm[k], gm[k]) {
				diffs = append(diffs, fmt.Sprintf("%s: %v.%s differs:\n ours:      %s\n Karpenter: %s", file, wm["name"], k, js(gm[k]), js(wm[k])))
			}
		}
		wf := flatten(wm["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any))
		gf := flatten(gm["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any))
		diffs = append(diffs, compareSchemas(file, wf, gf)...)
	}
	return diffs
}

func compareSchemas(file string, want, got map[string]map[string]any) []string {
	var diffs []string
	paths := make([]string, 0, len(want))
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		g, ok := got[p]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s: property %s is missing", file, p))
			continue
		}
		w := want[p]
		for _, k := range union(w, g) {
			if reflect.DeepEqual(w[k], g[k]) || isAllowed(file, p, k) {
				continue
			}
			diffs = append(diffs, fmt.Sprintf("%s: %s %s:\n ours:      %s\n Karpenter: %s", file, p, k, js(g[k]), js(w[k])))
		}
	}
	return diffs
}

// flatten maps each schema path (".spec.template.spec.requirements[].key") to
// its keywords, leaving out descriptions and the nested schemas themselves.
func flatten(schema map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		kw := map[string]any{}
		for k, v := range s {
			switch k {
			case "description":
			case "properties":
				for name, sub := range v.(map[string]any) {
					walk(path+"."+name, sub.(map[string]any))
				}
			case "items":
				walk(path+"[]", v.(map[string]any))
			case "additionalProperties":
				if m, ok := v.(map[string]any); ok {
					walk(path+"{}", m)
				} else {
					kw[k] = v
				}
			case "required", "enum":
				kw[k] = sortedStrings(v)
			default:
				kw[k] = v
			}
		}
		out[path] = kw
	}
	walk("", schema)
	return out
}

func sortedStrings(v any) []string {
	var s []string
	for _, x := range v.([]any) {
		s = append(s, fmt.Sprint(x))
	}
	sort.Strings(s)
	return s
}

func union(a, b map[string]any) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func loadDir(t *testing.T, dir, glob string) map[string]map[string]any {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, glob))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(strings.TrimPrefix(string(b), "---\n")), &doc); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out[filepath.Base(n)] = doc
	}
	return out
}

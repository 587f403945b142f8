// Command crdgen regenerates nodewright's deepcopy functions and CRDs with
// controller-gen (pinned in go.mod as a tool), then applies the schema fixups
// that kubebuilder markers cannot express because the fields are core Kubernetes
// types (taints, node selector requirements), the rule sits on an array, or it
// checks a map's values (an EC2NodeClass's kubelet quantities).
// Karpenter applies the same validation the same way, so this keeps our schemas
// equal to theirs.
//
//	go run ./hack/crdgen            write api/**/zz_generated.deepcopy.go and config/crd (and the charts' copies)
//	go run ./hack/crdgen -check     fail if the checked-in files are stale
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// apiPackages are the packages with generated deepcopy functions.
var apiPackages = []string{"api/aws/v1", "api/karpenter/v1", "api/karpenter/v1alpha1", "api/kwok/v1alpha1"}

// crdDirs each get the same CRD files: config/crd is what Go code embeds;
// the Helm chart installs its crds/ folder, and the CRD-only chart (as
// Karpenter's karpenter-crd) has them as its templates, which must hold
// nothing else named *.yaml.
var crdDirs = []string{"config/crd", "charts/nodewright/crds", "charts/nodewright-crd/templates"}

func main() {
	check := flag.Bool("check", false, "compare freshly generated files with the checked-in ones instead of writing")
	flag.Parse()
	if err := run(*check); err != nil {
		fmt.Fprintln(os.Stderr, "crdgen:", err)
		os.Exit(1)
	}
}

func run(check bool) error {
	tmp, err := os.MkdirTemp("", "crdgen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// Deepcopy: generated per package into a scratch folder, then compared or copied.
	var stale []string
	for _, pkg := range apiPackages {
		out := filepath.Join(tmp, "object", pkg)
		if err := controllerGen("object", "paths=./"+pkg, "output:object:dir="+out); err != nil {
			return err
		}
		s, err := sync(filepath.Join(out, "zz_generated.deepcopy.go"), filepath.Join(pkg, "zz_generated.deepcopy.go"), check)
		if err != nil {
			return err
		}
		stale = append(stale, s...)
	}

	raw := filepath.Join(tmp, "crd")
	if err := controllerGen("crd", "paths=./api/...", "output:crd:dir="+raw); err != nil {
		return err
	}
	names, err := filepath.Glob(filepath.Join(raw, "*.yaml"))
	if err != nil {
		return err
	}
	fixed := filepath.Join(tmp, "fixed")
	if err := os.MkdirAll(fixed, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return err
		}
		out, err := fixup(filepath.Base(n), b)
		if err != nil {
			return fmt.Errorf("fixing up %s: %w", filepath.Base(n), err)
		}
		dst := filepath.Join(fixed, filepath.Base(n))
		if err := os.WriteFile(dst, out, 0o644); err != nil {
			return err
		}
		for _, dir := range crdDirs {
			s, err := sync(dst, filepath.Join(dir, filepath.Base(n)), check)
			if err != nil {
				return err
			}
			stale = append(stale, s...)
		}
	}
	// A CRD whose type was removed must go too.
	var existing []string
	for _, dir := range crdDirs {
		e, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		existing = append(existing, e...)
	}
	for _, e := range existing {
		if _, err := os.Stat(filepath.Join(fixed, filepath.Base(e))); os.IsNotExist(err) {
			if check {
				stale = append(stale, e+" (no longer generated)")
			} else if err := os.Remove(e); err != nil {
				return err
			}
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		return fmt.Errorf("generated files are stale, run `make generate`:\n  %s", strings.Join(stale, "\n  "))
	}
	return nil
}

func controllerGen(args ...string) error {
	cmd := exec.Command("go", append([]string{"tool", "controller-gen"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = os.Stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("controller-gen %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return nil
}

// sync copies src to dst, or in check mode reports dst when it differs.
func sync(src, dst string, check bool) ([]string, error) {
	want, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	have, err := os.ReadFile(dst)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	if bytes.Equal(want, have) {
		return nil, nil
	}
	if check {
		return []string{dst}, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return nil, err
	}
	return nil, os.WriteFile(dst, want, 0o644)
}

// fixup applies the schema rules of schema.go to one CRD document.
func fixup(file string, in []byte) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(in, &doc); err != nil {
		return nil, err
	}
	versions, _ := dig(doc, "spec", "versions").([]any)
	for _, v := range versions {
		root, ok := dig(v, "schema", "openAPIV3Schema").(map[string]any)
		if !ok {
			return nil, fmt.Errorf("version without openAPIV3Schema")
		}
		walk("", root, func(path string, s map[string]any) {
			for _, r := range rules {
				if r.applies(file, path) {
					r.apply(s)
				}
			}
		})
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), out...), nil
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// walk visits every schema node with its path, as in ".spec.taints[].key".
func walk(path string, s map[string]any, visit func(string, map[string]any)) {
	visit(path, s)
	if props, ok := s["properties"].(map[string]any); ok {
		for name, sub := range props {
			if m, ok := sub.(map[string]any); ok {
				walk(path+"."+name, m, visit)
			}
		}
	}
	if m, ok := s["items"].(map[string]any); ok {
		walk(path+"[]", m, visit)
	}
	if m, ok := s["additionalProperties"].(map[string]any); ok {
		walk(path+"{}", m, visit)
	}
}

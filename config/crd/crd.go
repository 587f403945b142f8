// Package crd embeds nodewright's CustomResourceDefinitions, generated from the
// types under api/ by `make generate` (hack/crdgen), so that tests, `nodewright
// dev` and the controller install exactly what is checked in.
package crd

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// FS holds the CRD manifests, one per file.
var FS fs.FS = files

// All returns every CRD, ordered by file name.
func All() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, c); err != nil {
			return nil, fmt.Errorf("decoding CRD %s: %w", n, err)
		}
		out = append(out, c)
	}
	return out, nil
}

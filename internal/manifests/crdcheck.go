package manifests

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/nodewright/nodewright/config/crd"
)

// crdSchema is one served version of one of nodewright's CRDs, ready to
// check objects as kube-apiserver does on create: the OpenAPI schema, the
// x-kubernetes-validations rules, and the fields the schema does not know.
type crdSchema struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
	cel        *cel.Validator
}

var (
	crdSchemasOnce sync.Once
	crdSchemas     map[string]*crdSchema // by apiVersion/kind
	crdSchemasErr  error
)

// schemas compiles the embedded CRDs once.
func schemas() (map[string]*crdSchema, error) {
	crdSchemasOnce.Do(func() {
		all, err := crd.All()
		if err != nil {
			crdSchemasErr = err
			return
		}
		crdSchemas = map[string]*crdSchema{}
		for _, c := range all {
			for _, v := range c.Spec.Versions {
				if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
					continue
				}
				s, err := compile(v.Schema.OpenAPIV3Schema)
				if err != nil {
					crdSchemasErr = fmt.Errorf("CRD %s version %s: %w", c.Name, v.Name, err)
					return
				}
				crdSchemas[c.Spec.Group+"/"+v.Name+"/"+c.Spec.Names.Kind] = s
			}
		}
	})
	return crdSchemas, crdSchemasErr
}

func compile(v1 *apiextensionsv1.JSONSchemaProps) (*crdSchema, error) {
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, err
	}
	validator, _, err := validation.NewSchemaValidator(internal)
	if err != nil {
		return nil, err
	}
	return &crdSchema{structural: structural, validator: validator,
		cel: cel.NewValidator(structural, true, celconfig.PerCallLimit)}, nil
}

// checkCRD reports what kube-apiserver would refuse in js, an object of
// one of nodewright's CRDs (apiVersion/kind key): each message names the
// field. Unknown fields, which the API server would drop and kubectl's
// strict validation refuses, are reported too, so that a misspelt field
// (consolidateafter) is not silently ignored. Objects of other kinds pass.
func checkCRD(key string, js []byte) ([]string, error) {
	all, err := schemas()
	if err != nil {
		return nil, fmt.Errorf("reading nodewright's CRDs: %w", err)
	}
	s, ok := all[key]
	if !ok {
		return nil, nil
	}
	// As the API server reads it: whole numbers as int64, which the
	// rules' integer comparisons need.
	var obj map[string]any
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return nil, err
	}
	// The API server's steps before it validates: drop unknown fields (we
	// report them), drop nulls the schema does not allow, fill in defaults.
	var out []string
	for _, p := range pruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		out = append(out, fmt.Sprintf("%s: unknown field (field names are case-sensitive); check its spelling against the schema", p))
	}
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, s.structural)
	structuraldefaulting.Default(obj, s.structural)
	errs := validation.ValidateCustomResource(nil, obj, s.validator)
	if len(errs) == 0 {
		// As in the API server, the rules run only on a schema-valid object.
		celErrs, _ := s.cel.Validate(context.Background(), nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	for _, e := range errs {
		out = append(out, fieldError(e))
	}
	sort.Strings(out)
	return out, nil
}

// fieldError is e with its field first, as kubectl prints the API server's.
func fieldError(e *field.Error) string {
	return strings.TrimSpace(e.Error())
}

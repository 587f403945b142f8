package charts

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

const (
	mainChart = "nodewright"
	crdChart  = "nodewright-crd"
	// The release and namespace config/rbac and config/deploy name: with
	// them the chart's default objects have the manifests' names.
	releaseName      = "nodewright"
	releaseNamespace = "nodewright"
)

// scheme decodes what the charts and the manifests hold into typed objects.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// rendered is a chart's templates rendered with one set of values.
type rendered struct {
	objects []client.Object
	notes   string
}

// render renders the chart in dir as `helm template` would for a release,
// with values given as YAML over the chart's values.yaml. The engine is
// strict: a template that reads a value values.yaml lacks is an error.
func render(dir, values, release, namespace string) (*rendered, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		return nil, fmt.Errorf("reading values: %w", err)
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: release, Namespace: namespace, Revision: 1, IsInstall: true,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("values of chart %s: %w", dir, err)
	}
	files, err := engine.Engine{Strict: true}.Render(ch, rv)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", dir, err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	out := &rendered{}
	for _, n := range names {
		switch {
		case path.Base(n) == "NOTES.txt":
			out.notes = files[n]
		case strings.HasSuffix(n, ".yaml"):
			objs, err := decode([]byte(files[n]))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			out.objects = append(out.objects, objs...)
		}
	}
	return out, nil
}

// decode reads a multi-document YAML stream into typed objects, strictly:
// a misspelt or misplaced field is an error. Kinds the scheme does not know
// (the ServiceMonitor) come back unstructured.
func decode(stream []byte) ([]client.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var out []client.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, err
		}
		if tm.Kind == "" {
			continue // only comments
		}
		gvk := tm.GroupVersionKind()
		var obj client.Object
		if typed, err := scheme.New(gvk); err == nil {
			obj = typed.(client.Object)
		} else {
			obj = &unstructured.Unstructured{}
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", gvk.Kind, err)
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		out = append(out, obj)
	}
}

// kindOf names an object's kind, from its Go type when TypeMeta is empty
// (objects read back from an API server).
func kindOf(o client.Object) string {
	if k := o.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	gvks, _, err := scheme.ObjectKinds(o)
	if err != nil || len(gvks) == 0 {
		return fmt.Sprintf("%T", o)
	}
	return gvks[0].Kind
}

// key names an object as the tests report it: kind, then namespace/name,
// or the name alone for a cluster-scoped object.
func key(o client.Object) string {
	if o.GetNamespace() == "" {
		return kindOf(o) + " " + o.GetName()
	}
	return kindOf(o) + " " + o.GetNamespace() + "/" + o.GetName()
}

// only returns the one object of type T; several or none is an error.
func only[T client.Object](objs []client.Object) (T, error) {
	var found []T
	for _, o := range objs {
		if t, ok := o.(T); ok {
			found = append(found, t)
		}
	}
	if len(found) != 1 {
		var zero T
		return zero, fmt.Errorf("%d objects of type %T, want 1", len(found), zero)
	}
	return found[0], nil
}

// toYAML is the text tests compare and print.
func toYAML(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

package charts

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/config/deploy"
	"github.com/nodewright/nodewright/config/rbac"
)

// instanceLabel tells one release's pods from another's. The chart selects
// pods by it as well as by app.kubernetes.io/name; config/deploy, of which
// a cluster has one copy, selects by the name alone.
const instanceLabel = "app.kubernetes.io/instance"

// defaultArgs are arguments the chart always passes and config/deploy
// leaves to the flags' defaults (TestRenderedArgsParse checks that they are
// those defaults): the chart names its cloud provider and log level so that
// `kubectl describe` shows them.
var defaultArgs = []string{"--log-level=info", "--cloud-provider=kwok"}

// manifests are the objects of config/rbac and config/deploy that the chart
// also makes. The Namespace is left out: Helm installs into a namespace
// that exists or that `--create-namespace` makes.
func manifests() ([]client.Object, error) {
	var out []client.Object
	for name, m := range map[string][]byte{"config/rbac": rbac.Manifest, "config/deploy": deploy.Manifest} {
		objs, err := decode(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, o := range objs {
			if _, ok := o.(*corev1.Namespace); !ok {
				out = append(out, o)
			}
		}
	}
	slices.SortFunc(out, func(a, b client.Object) int { return strings.Compare(key(a), key(b)) })
	return out, nil
}

// normalizeChart rewrites an object of the chart in the forms of its
// counterpart in the manifests, for the differences that must exist, and
// reports differences that must not: a label of the manifest's object that
// the chart's lacks.
func normalizeChart(chart, manifest client.Object) error {
	// Labels: the chart gives every object Helm's recommended labels (name,
	// instance, chart, version, managed-by); the manifests label a few
	// objects with the name alone. What the manifest has, the chart must.
	for k, v := range manifest.GetLabels() {
		if chart.GetLabels()[k] != v {
			return fmt.Errorf("%s: label %s=%s missing, the chart has %v", key(chart), k, v, chart.GetLabels())
		}
	}
	chart.SetLabels(manifest.GetLabels())
	for _, sel := range selectors(chart) {
		delete(sel, instanceLabel)
	}
	if d, ok := chart.(*appsv1.Deployment); ok && len(d.Spec.Template.Spec.Containers) > 0 {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return slices.Contains(defaultArgs, a) })
	}
	return nil
}

// selectors returns the label maps an object selects its pods by, and the
// pod template's labels, which those selectors match.
func selectors(o client.Object) []map[string]string {
	var out []map[string]string
	addSel := func(s *metav1.LabelSelector) {
		if s != nil && s.MatchLabels != nil {
			out = append(out, s.MatchLabels)
		}
	}
	switch o := o.(type) {
	case *appsv1.Deployment:
		addSel(o.Spec.Selector)
		if o.Spec.Template.Labels != nil {
			out = append(out, o.Spec.Template.Labels)
		}
		spec := o.Spec.Template.Spec
		if a := spec.Affinity; a != nil {
			for _, pa := range []struct {
				req  []corev1.PodAffinityTerm
				pref []corev1.WeightedPodAffinityTerm
			}{
				{podAffinityReq(a.PodAffinity), podAffinityPref(a.PodAffinity)},
				{podAntiAffinityReq(a.PodAntiAffinity), podAntiAffinityPref(a.PodAntiAffinity)},
			} {
				for i := range pa.req {
					addSel(pa.req[i].LabelSelector)
				}
				for i := range pa.pref {
					addSel(pa.pref[i].PodAffinityTerm.LabelSelector)
				}
			}
		}
		for i := range spec.TopologySpreadConstraints {
			addSel(spec.TopologySpreadConstraints[i].LabelSelector)
		}
	case *policyv1.PodDisruptionBudget:
		addSel(o.Spec.Selector)
	case *corev1.Service:
		if o.Spec.Selector != nil {
			out = append(out, o.Spec.Selector)
		}
	}
	return out
}

func podAffinityReq(a *corev1.PodAffinity) []corev1.PodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.RequiredDuringSchedulingIgnoredDuringExecution
}

func podAffinityPref(a *corev1.PodAffinity) []corev1.WeightedPodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.PreferredDuringSchedulingIgnoredDuringExecution
}

func podAntiAffinityReq(a *corev1.PodAntiAffinity) []corev1.PodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.RequiredDuringSchedulingIgnoredDuringExecution
}

func podAntiAffinityPref(a *corev1.PodAntiAffinity) []corev1.WeightedPodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.PreferredDuringSchedulingIgnoredDuringExecution
}

// stripServerFields keeps, of an object read from an API server, what a
// manifest states: the server's bookkeeping (uid, resource version,
// managed fields, status), the annotations Helm records its release in, and
// the Service's allocated cluster IPs differ between any two objects.
func stripServerFields(o client.Object) {
	ann := maps.Clone(o.GetAnnotations())
	maps.DeleteFunc(ann, func(k, _ string) bool { return strings.HasPrefix(k, "meta.helm.sh/") })
	if len(ann) == 0 {
		ann = nil
	}
	meta := metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), Labels: o.GetLabels(), Annotations: ann}
	switch o := o.(type) {
	case *appsv1.Deployment:
		o.ObjectMeta, o.Status = meta, appsv1.DeploymentStatus{}
	case *policyv1.PodDisruptionBudget:
		o.ObjectMeta, o.Status = meta, policyv1.PodDisruptionBudgetStatus{}
	case *corev1.Service:
		o.ObjectMeta, o.Status = meta, corev1.ServiceStatus{}
		o.Spec.ClusterIP, o.Spec.ClusterIPs = "", nil
	default:
		o.SetUID("")
		o.SetResourceVersion("")
		o.SetCreationTimestamp(metav1.Time{})
		o.SetManagedFields(nil)
		o.SetGeneration(0)
		o.SetAnnotations(ann)
	}
}

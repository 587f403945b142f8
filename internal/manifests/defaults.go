package manifests

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
)

// The defaults below are those of the CRDs and of the API server: a
// manifest written for kubectl apply leaves them out, and the solver and
// planner read the objects as the API server would have stored them.

func defaultNamespace(ns *string) {
	if *ns == "" {
		*ns = corev1.NamespaceDefault
	}
}

func defaultNodePool(np *karpv1.NodePool) {
	d := &np.Spec.Disruption
	// Raw is nil only when the field was left out; "Never" keeps its text.
	if d.ConsolidateAfter.Duration == nil && d.ConsolidateAfter.Raw == nil {
		d.ConsolidateAfter = karpv1.MustParseNillableDuration("0s")
	}
	if d.ConsolidationPolicy == "" {
		d.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
	}
	if d.Budgets == nil {
		d.Budgets = []karpv1.Budget{{Nodes: "10%"}}
	}
	for i := range d.Budgets {
		if d.Budgets[i].Nodes == "" {
			d.Budgets[i].Nodes = "10%"
		}
	}
	t := &np.Spec.Template.Spec
	if t.ExpireAfter.Duration == nil && t.ExpireAfter.Raw == nil {
		t.ExpireAfter = karpv1.MustParseNillableDuration("720h")
	}
}

func defaultNodeClaim(nc *karpv1.NodeClaim) {
	if nc.Spec.ExpireAfter.Duration == nil && nc.Spec.ExpireAfter.Raw == nil {
		nc.Spec.ExpireAfter = karpv1.MustParseNillableDuration("720h")
	}
}

func defaultNodeClass(nc *kwokv1alpha1.KWOKNodeClass) {
	if nc.Spec.Image == "" {
		nc.Spec.Image = kwokv1alpha1.DefaultImage
	}
}

// defaultEC2NodeClass applies the CRD's defaults that matter offline: the
// instance metadata options.
func defaultEC2NodeClass(nc *awsv1.EC2NodeClass) {
	awsv1.SetDefaults(nc)
}

func defaultPod(p *corev1.Pod) {
	defaultNamespace(&p.Namespace)
	defaultPodSpec(&p.Spec)
	if p.Status.Phase == "" {
		p.Status.Phase = corev1.PodPending
	}
}

// defaultPodSpec applies the API server's defaulting that changes what a
// pod asks for: a container that sets a limit and no request for a
// resource requests the limit (how GPU pods usually ask for GPUs).
func defaultPodSpec(spec *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; ok {
					continue
				}
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
}

// UID is the UID the simulator gives an object that has none: stable, so
// that runs over the same input are alike.
func UID(kind, namespace, name string) types.UID {
	if namespace == "" {
		return types.UID(fmt.Sprintf("sim-%s-%s", kind, name))
	}
	return types.UID(fmt.Sprintf("sim-%s-%s-%s", kind, namespace, name))
}

// fillUID gives an object without a UID the simulator's own.
func fillUID(kind string, m metav1.Object) {
	if m.GetUID() == "" {
		m.SetUID(UID(kind, m.GetNamespace(), m.GetName()))
	}
}

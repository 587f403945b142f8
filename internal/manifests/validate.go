package manifests

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider/aws"
	"github.com/nodewright/nodewright/internal/cloudprovider/offline"
)

// remember records the file an object came from.
func (l *loader) remember(file string, obj any) {
	if l.origin == nil {
		l.origin = map[any]string{}
	}
	// By the object itself: two objects of one kind and name from two
	// files are each reported against their own file.
	l.origin[obj] = file
	if l.inBase {
		if l.fromBase == nil {
			l.fromBase = map[any]bool{}
		}
		l.fromBase[obj] = true
	}
}

func (l *loader) fileOf(obj metav1.Object) string {
	return l.origin[obj]
}

// keep filters objects, reporting each that ok rejects; a later object of
// the same kind and name as an earlier one is rejected too, except that a
// file's object silently replaces the base's.
func keep[T metav1.Object](l *loader, kind string, objs []T, ok func(T) string) []T {
	inFiles := map[string]bool{}
	if len(l.fromBase) > 0 {
		for _, o := range objs {
			if !l.fromBase[o] {
				inFiles[o.GetNamespace()+"/"+o.GetName()] = true
			}
		}
	}
	out := objs[:0]
	// seen holds the first object of each name, refused says whether it
	// was: a second one is not used in its place, which would make a fix
	// in the second file look as if it had worked.
	seen, refused := map[string]T{}, map[string]bool{}
	for _, o := range objs {
		id := o.GetNamespace() + "/" + o.GetName()
		if l.fromBase[o] && inFiles[id] {
			continue
		}
		why := ""
		if first, twice := seen[id]; twice {
			why = "defined twice; keep one of the two (the first one is used)"
			if refused[id] {
				why = fmt.Sprintf("defined twice; keep one of the two (the first, in %s, was refused, and neither is used)", l.fileOf(first))
			}
		} else if ok != nil {
			why = ok(o)
		}
		if _, twice := seen[id]; !twice {
			seen[id], refused[id] = o, why != ""
		}
		if why != "" {
			l.problem(Problem{File: l.fileOf(o), Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName(), Message: why})
			continue
		}
		fillUID(kind, o)
		out = append(out, o)
	}
	return out
}

// validate drops objects that refer to missing objects or cannot be used,
// with a Problem each. NodeClasses go first, NodePools next, since the
// objects after them refer to them.
func (l *loader) validate() {
	s := l.set
	s.NodeClasses = keep(l, "KWOKNodeClass", s.NodeClasses, nil)
	s.EC2NodeClasses = keep(l, "EC2NodeClass", s.EC2NodeClasses, checkEC2NodeClass)
	s.NodePools = keep(l, "NodePool", s.NodePools, func(np *karpv1.NodePool) string { return l.checkNodePool(np) })
	s.NodeClaims = keep(l, "NodeClaim", s.NodeClaims, func(nc *karpv1.NodeClaim) string {
		pool := nc.Labels[karpv1.NodePoolLabelKey]
		switch {
		case pool == "":
			return fmt.Sprintf("has no %s label; add the name of the NodePool it belongs to", karpv1.NodePoolLabelKey)
		case s.NodePool(pool) == nil:
			return fmt.Sprintf("refers to NodePool %s, which is not in the input (or was rejected); add it or remove the NodeClaim", pool)
		}
		return ""
	})
	s.NodeOverlays = keep(l, "NodeOverlay", s.NodeOverlays, nil)
	s.Nodes = keep(l, "Node", s.Nodes, func(n *corev1.Node) string {
		if pool := n.Labels[karpv1.NodePoolLabelKey]; pool != "" && s.NodePool(pool) == nil {
			return fmt.Sprintf("has label %s=%s, but that NodePool is not in the input; add it, or remove the label to keep the node as one nodewright does not manage",
				karpv1.NodePoolLabelKey, pool)
		}
		if len(n.Status.Allocatable) == 0 {
			return "has no status.allocatable; export nodes with kubectl get nodes -o yaml, which includes their status"
		}
		return ""
	})
	s.Pods = keep(l, "Pod", s.Pods, func(p *corev1.Pod) string { return checkPodSpec(&p.Spec, "spec") })
	s.Deployments = keep(l, "Deployment", s.Deployments, nil)
	s.StatefulSets = keep(l, "StatefulSet", s.StatefulSets, nil)
	s.ReplicaSets = keep(l, "ReplicaSet", s.ReplicaSets, nil)
	s.Jobs = keep(l, "Job", s.Jobs, nil)
	s.DaemonSets = keep(l, "DaemonSet", s.DaemonSets, func(d *appsv1.DaemonSet) string { return checkPodSpec(&d.Spec.Template.Spec, "spec.template.spec") })
	s.PDBs = keep(l, "PodDisruptionBudget", s.PDBs, nil)
	s.PVs = keep(l, "PersistentVolume", s.PVs, nil)
	s.PVCs = keep(l, "PersistentVolumeClaim", s.PVCs, nil)
	s.StorageClasses = keep(l, "StorageClass", s.StorageClasses, nil)
	s.Namespaces = keep(l, "Namespace", s.Namespaces, nil)
}

// checkNodePool says what keeps a NodePool from launching, or "".
func (l *loader) checkNodePool(np *karpv1.NodePool) string {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Name == "" {
		return "spec.template.spec.nodeClassRef is missing; point it at an EC2NodeClass (group karpenter.k8s.aws) or a KWOKNodeClass (group nodewright.dev)"
	}
	switch {
	case offline.IsEC2NodeClass(ref):
		if l.set.EC2NodeClass(ref.Name) == nil {
			return fmt.Sprintf("spec.template.spec.nodeClassRef names EC2NodeClass %s, which is not in the input or was refused; add it (a kind: EC2NodeClass manifest) or fix it", ref.Name)
		}
	case offline.IsKWOKNodeClass(ref):
		if l.set.NodeClass(ref.Name) == nil {
			return fmt.Sprintf("spec.template.spec.nodeClassRef names KWOKNodeClass %s, which is not in the input or was refused; add it (a kind: KWOKNodeClass manifest) or fix it", ref.Name)
		}
	default:
		return fmt.Sprintf("spec.template.spec.nodeClassRef is %s/%s %s; nodewright launches EC2NodeClass (group %s) and KWOKNodeClass (group %s) nodes: change the reference",
			ref.Group, ref.Kind, ref.Name, awsv1.Group, kwokv1alpha1.Group)
	}
	for i, r := range np.Spec.Template.Spec.Requirements {
		if r.Key == "" {
			return fmt.Sprintf("spec.template.spec.requirements[%d].key is empty", i)
		}
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 0 {
			return fmt.Sprintf("spec.template.spec.requirements[%d] (%s In) has no values; list at least one", i, r.Key)
		}
	}
	return ""
}

// checkEC2NodeClass says what keeps an EC2NodeClass from shaping nodes
// offline, or "". The API server enforces the rest of its schema; offline
// the AMI family and the kubelet's reservations matter, since they decide
// max pods, overhead and disks.
func checkEC2NodeClass(nc *awsv1.EC2NodeClass) string {
	if nc.AMIFamily() == "" {
		return "spec.amiSelectorTerms has no alias and spec.amiFamily is not set; add an alias term such as {alias: al2023@latest} or set amiFamily"
	}
	if err := aws.SettingsFor(nc).Validate(); err != nil {
		return err.Error() + "; write a quantity such as 500Mi or 200m (evictionHard also takes a percentage such as 5%)"
	}
	return ""
}

// checkPodSpec says what makes a pod spec unusable, or "".
func checkPodSpec(spec *corev1.PodSpec, field string) string {
	if len(spec.Containers) == 0 {
		return field + ".containers is empty; a pod needs at least one container"
	}
	for i, c := range spec.Containers {
		for name, q := range c.Resources.Requests {
			if q.Sign() < 0 {
				return fmt.Sprintf("%s.containers[%d].resources.requests.%s is negative", field, i, name)
			}
		}
	}
	if strings.TrimSpace(spec.NodeName) != spec.NodeName {
		return field + ".nodeName has spaces"
	}
	return ""
}

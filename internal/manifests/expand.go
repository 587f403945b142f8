package manifests

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// DurationAnnotation on a Job, or on a pod or pod template, is how long
// each of its pods runs (a Go duration) in a simulation before it ends; a
// pod without it runs until the end.
const DurationAnnotation = "nodewright.dev/simulated-duration"

// Workload is a Deployment, StatefulSet, ReplicaSet or Job as the
// simulator scales it: a pod template and a replica count.
type Workload struct {
	Kind, Namespace, Name string
	UID                   types.UID
	Template              corev1.PodTemplateSpec
	Selector              *metav1.LabelSelector
	// Replicas is spec.replicas, or a Job's spec.parallelism.
	Replicas int32
	// Annotations of the workload itself (a Job's duration may be there).
	Annotations map[string]string
	// OwnedBy names the Deployment that owns a ReplicaSet, "" otherwise.
	OwnedBy string
}

// Workloads lists the set's workloads in a stable order: by kind as
// listed in the Set, then as read.
func (s *Set) Workloads() []Workload {
	var out []Workload
	for _, d := range s.Deployments {
		out = append(out, Workload{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, UID: d.UID,
			Template: d.Spec.Template, Selector: d.Spec.Selector, Replicas: replicas(d.Spec.Replicas), Annotations: d.Annotations})
	}
	for _, d := range s.StatefulSets {
		out = append(out, Workload{Kind: "StatefulSet", Namespace: d.Namespace, Name: d.Name, UID: d.UID,
			Template: d.Spec.Template, Selector: d.Spec.Selector, Replicas: replicas(d.Spec.Replicas), Annotations: d.Annotations})
	}
	for _, d := range s.ReplicaSets {
		w := Workload{Kind: "ReplicaSet", Namespace: d.Namespace, Name: d.Name, UID: d.UID,
			Template: d.Spec.Template, Selector: d.Spec.Selector, Replicas: replicas(d.Spec.Replicas), Annotations: d.Annotations}
		if ref := metav1.GetControllerOf(d); ref != nil && ref.Kind == "Deployment" {
			w.OwnedBy = ref.Name
		}
		out = append(out, w)
	}
	for _, j := range s.Jobs {
		out = append(out, Workload{Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID,
			Template: j.Spec.Template, Selector: j.Spec.Selector, Replicas: replicas(j.Spec.Parallelism), Annotations: j.Annotations})
	}
	return out
}

// replicas reads an optional count, whose API default is 1.
func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// Selects reports whether the workload's pods include p: same namespace
// and its selector matches (a Job without one matches its template's
// labels).
func (w Workload) Selects(p *corev1.Pod) bool {
	if p.Namespace != w.Namespace {
		return false
	}
	if w.Selector == nil {
		return len(w.Template.Labels) > 0 && labels.SelectorFromSet(w.Template.Labels).Matches(labels.Set(p.Labels))
	}
	sel, err := metav1.LabelSelectorAsSelector(w.Selector)
	return err == nil && !sel.Empty() && sel.Matches(labels.Set(p.Labels))
}

// Pod is the workload's i-th pod, pending: unbound, with the controller
// reference a real controller would set, so the disruption planner treats
// it as a pod that can move. A Deployment's pods are owned by a ReplicaSet
// named after it, as kube-controller-manager would make.
func (w Workload) Pod(i int) *corev1.Pod {
	ownerKind, ownerName, ownerUID, apiVersion := w.Kind, w.Name, w.UID, "apps/v1"
	if w.Kind == "Deployment" {
		ownerKind, ownerName = "ReplicaSet", w.Name+"-sim"
		ownerUID = UID("ReplicaSet", w.Namespace, ownerName)
	}
	if w.Kind == "Job" {
		apiVersion = "batch/v1"
	}
	name := fmt.Sprintf("%s-%d", ownerName, i)
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: w.Namespace, UID: UID("Pod", w.Namespace, name),
			Labels: copyMap(w.Template.Labels), Annotations: copyMap(w.Template.Annotations),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: ownerKind, Name: ownerName, UID: ownerUID,
				Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
		},
		Spec:   *w.Template.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if d, ok := w.Annotations[DurationAnnotation]; ok {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		if _, set := p.Annotations[DurationAnnotation]; !set {
			p.Annotations[DurationAnnotation] = d
		}
	}
	if w.Kind == "StatefulSet" {
		p.Spec.Hostname = name
	}
	return p
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// expand adds the pods of workloads that have none in the input. A
// ReplicaSet a Deployment of the input owns is left to the Deployment.
func (l *loader) expand() {
	s := l.set
	deployments := map[string]bool{}
	for _, d := range s.Deployments {
		deployments[d.Namespace+"/"+d.Name] = true
	}
	for _, w := range s.Workloads() {
		if w.OwnedBy != "" && deployments[w.Namespace+"/"+w.OwnedBy] {
			continue
		}
		if w.HasPods(s.Pods) {
			continue
		}
		for i := 0; i < int(w.Replicas); i++ {
			s.Pods = append(s.Pods, w.Pod(i))
		}
	}
	l.unbindOrphans()
}

// HasPods reports whether any of pods belongs to the workload.
func (w Workload) HasPods(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if w.Selects(p) {
			return true
		}
	}
	return false
}

// unbindOrphans makes pods bound to a node that is not in the input
// pending again: the node is gone as far as the simulation knows.
func (l *loader) unbindOrphans() {
	s := l.set
	nodes := map[string]bool{}
	for _, n := range s.Nodes {
		nodes[n.Name] = true
	}
	for _, p := range s.Pods {
		if p.Spec.NodeName == "" || nodes[p.Spec.NodeName] {
			continue
		}
		l.problem(Problem{File: l.fileOf(p), Kind: "Pod", Namespace: p.Namespace, Name: p.Name,
			Message: fmt.Sprintf("is bound to node %s, which is not in the input; simulated as pending (add the node to keep it bound)", p.Spec.NodeName)})
		p.Spec.NodeName = ""
		p.Status.Phase = corev1.PodPending
	}
}

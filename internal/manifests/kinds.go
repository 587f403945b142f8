package manifests

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
)

// kind decodes one kind of object into the Set.
type kind struct {
	add func(l *loader, dec *json.Decoder, file string) error
	// typ is the Go type decoded, to find the field a decode error is
	// about (badQuantities).
	typ reflect.Type
}

// decodeInto returns a kind that decodes a T, applies fix (defaults, a
// namespace) and appends it with put.
func decodeInto[T any](fix func(*T), put func(*Set, *T)) kind {
	return kind{add: func(l *loader, dec *json.Decoder, file string) error {
		obj := new(T)
		if err := dec.Decode(obj); err != nil {
			return err
		}
		if fix != nil {
			fix(obj)
		}
		put(l.set, obj)
		l.remember(file, obj)
		return nil
	}, typ: reflect.TypeFor[T]()}
}

// kinds are the objects the simulator reads, by apiVersion/kind.
var kinds = map[string]kind{
	"karpenter.sh/v1/NodePool":  decodeInto(defaultNodePool, func(s *Set, o *karpv1.NodePool) { s.NodePools = append(s.NodePools, o) }),
	"karpenter.sh/v1/NodeClaim": decodeInto(defaultNodeClaim, func(s *Set, o *karpv1.NodeClaim) { s.NodeClaims = append(s.NodeClaims, o) }),
	"karpenter.sh/v1alpha1/NodeOverlay": decodeInto(nil, func(s *Set, o *karpv1alpha1.NodeOverlay) {
		s.NodeOverlays = append(s.NodeOverlays, o)
	}),
	awsv1.SchemeGroupVersion.String() + "/EC2NodeClass": decodeInto(defaultEC2NodeClass, func(s *Set, o *awsv1.EC2NodeClass) {
		s.EC2NodeClasses = append(s.EC2NodeClasses, o)
	}),
	kwokv1alpha1.SchemeGroupVersion.String() + "/KWOKNodeClass": decodeInto(defaultNodeClass, func(s *Set, o *kwokv1alpha1.KWOKNodeClass) {
		s.NodeClasses = append(s.NodeClasses, o)
	}),
	"v1/Node":             decodeInto(nil, func(s *Set, o *corev1.Node) { s.Nodes = append(s.Nodes, o) }),
	"v1/Pod":              decodeInto(defaultPod, func(s *Set, o *corev1.Pod) { s.Pods = append(s.Pods, o) }),
	"v1/Namespace":        decodeInto(nil, func(s *Set, o *corev1.Namespace) { s.Namespaces = append(s.Namespaces, o) }),
	"v1/PersistentVolume": decodeInto(nil, func(s *Set, o *corev1.PersistentVolume) { s.PVs = append(s.PVs, o) }),
	"v1/PersistentVolumeClaim": decodeInto(func(o *corev1.PersistentVolumeClaim) { defaultNamespace(&o.Namespace) },
		func(s *Set, o *corev1.PersistentVolumeClaim) { s.PVCs = append(s.PVCs, o) }),
	"apps/v1/Deployment": decodeInto(func(o *appsv1.Deployment) { defaultNamespace(&o.Namespace); defaultPodSpec(&o.Spec.Template.Spec) },
		func(s *Set, o *appsv1.Deployment) { s.Deployments = append(s.Deployments, o) }),
	"apps/v1/StatefulSet": decodeInto(func(o *appsv1.StatefulSet) { defaultNamespace(&o.Namespace); defaultPodSpec(&o.Spec.Template.Spec) },
		func(s *Set, o *appsv1.StatefulSet) { s.StatefulSets = append(s.StatefulSets, o) }),
	"apps/v1/ReplicaSet": decodeInto(func(o *appsv1.ReplicaSet) { defaultNamespace(&o.Namespace); defaultPodSpec(&o.Spec.Template.Spec) },
		func(s *Set, o *appsv1.ReplicaSet) { s.ReplicaSets = append(s.ReplicaSets, o) }),
	"apps/v1/DaemonSet": decodeInto(func(o *appsv1.DaemonSet) { defaultNamespace(&o.Namespace); defaultPodSpec(&o.Spec.Template.Spec) },
		func(s *Set, o *appsv1.DaemonSet) { s.DaemonSets = append(s.DaemonSets, o) }),
	"batch/v1/Job": decodeInto(func(o *batchv1.Job) { defaultNamespace(&o.Namespace); defaultPodSpec(&o.Spec.Template.Spec) },
		func(s *Set, o *batchv1.Job) { s.Jobs = append(s.Jobs, o) }),
	"policy/v1/PodDisruptionBudget": decodeInto(func(o *policyv1.PodDisruptionBudget) { defaultNamespace(&o.Namespace) },
		func(s *Set, o *policyv1.PodDisruptionBudget) { s.PDBs = append(s.PDBs, o) }),
	"storage.k8s.io/v1/StorageClass": decodeInto(nil, func(s *Set, o *storagev1.StorageClass) {
		s.StorageClasses = append(s.StorageClasses, o)
	}),
}

// Kinds are the apiVersion and kind of every object the loader reads, in
// a stable order: what to list from a live cluster.
func Kinds() []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(kinds))
	for k := range kinds {
		i := strings.LastIndex(k, "/")
		gv, err := schema.ParseGroupVersion(k[:i])
		if err != nil {
			panic(err) // the table above is wrong
		}
		out = append(out, gv.WithKind(k[i+1:]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func knownKinds() string {
	var names []string
	for k := range kinds {
		names = append(names, k[strings.LastIndex(k, "/")+1:])
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

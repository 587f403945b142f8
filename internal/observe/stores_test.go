package observe

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
)

// informers hands out client-go shared informers, never started, whose
// stores hold objs; with bare set, informers that expose no store.
type informers struct {
	ctrlcache.Informers
	objs []client.Object
	bare bool
}

type bareInformer struct{ ctrlcache.Informer }

func (f informers) GetInformer(_ context.Context, obj client.Object, _ ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	if f.bare {
		return bareInformer{}, nil
	}
	inf := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, obj, 0, toolscache.Indexers{})
	for _, o := range f.objs {
		if kindOf(o) == kindOf(obj) {
			if err := inf.GetStore().Add(o); err != nil {
				return nil, err
			}
		}
	}
	return inf, nil
}

// kindOf names the kind of o as names does.
func kindOf(o runtime.Object) string {
	switch o.(type) {
	case *karpv1.NodePool:
		return "NodePool"
	case *karpv1.NodeClaim:
		return "NodeClaim"
	case *corev1.Node:
		return "Node"
	case *corev1.Pod:
		return "Pod"
	case *appsv1.DaemonSet:
		return "DaemonSet"
	case *corev1.PersistentVolumeClaim:
		return "PVC"
	case *corev1.PersistentVolume:
		return "PV"
	case *storagev1.StorageClass:
		return "StorageClass"
	case *corev1.Namespace:
		return "Namespace"
	case *policyv1.PodDisruptionBudget:
		return "PDB"
	case *karpv1alpha1.NodeOverlay:
		return "NodeOverlay"
	}
	return "?"
}

// oneOfEach is an object of every kind List reads, named after its kind.
func oneOfEach() []client.Object {
	m := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "ns"} }
	c := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
	return []client.Object{
		&karpv1.NodePool{ObjectMeta: c("NodePool")}, &karpv1.NodeClaim{ObjectMeta: c("NodeClaim")},
		&corev1.Node{ObjectMeta: c("Node")}, &corev1.Pod{ObjectMeta: m("Pod")}, &corev1.Pod{ObjectMeta: m("Pod2")},
		&appsv1.DaemonSet{ObjectMeta: m("DaemonSet")}, &corev1.PersistentVolumeClaim{ObjectMeta: m("PVC")},
		&corev1.PersistentVolume{ObjectMeta: c("PV")}, &storagev1.StorageClass{ObjectMeta: c("StorageClass")},
		&corev1.Namespace{ObjectMeta: c("Namespace")}, &policyv1.PodDisruptionBudget{ObjectMeta: m("PDB")},
		&karpv1alpha1.NodeOverlay{ObjectMeta: c("NodeOverlay")},
	}
}

// names lists, kind by kind, the names in o.
func names(o *Objects) map[string][]string {
	out := map[string][]string{}
	c := o.Cluster
	addAll(out, "NodePool", c.NodePools)
	addAll(out, "NodeClaim", c.NodeClaims)
	addAll(out, "Node", c.Nodes)
	addAll(out, "Pod", c.Pods)
	addAll(out, "DaemonSet", c.DaemonSets)
	addAll(out, "PVC", c.PVCs)
	addAll(out, "PV", c.PVs)
	addAll(out, "StorageClass", c.StorageClasses)
	addAll(out, "Namespace", c.Namespaces)
	addAll(out, "PDB", o.PDBs)
	addAll(out, "NodeOverlay", o.Overlays)
	return out
}

func addAll[T metav1.Object](out map[string][]string, kind string, objs []T) {
	for _, x := range objs {
		out[kind] = append(out[kind], x.GetName())
	}
}

func TestStoresLook(t *testing.T) {
	objs := oneOfEach()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme,
		storagev1.AddToScheme, karpv1.AddToScheme, karpv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(oneOfEach()...).Build()
	tests := []struct {
		name      string
		informers ctrlcache.Informers
		// nilStores looks through the reader instead.
		nilStores bool
		wantErr   string
		// same: the objects are the stores' own, not copies.
		same bool
	}{
		{name: "through the stores", informers: informers{objs: objs}, same: true},
		{name: "no stores: through the reader", nilStores: true},
		{name: "an informer without a store", informers: informers{bare: true}, wantErr: "exposes no store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s *Stores
			if !tt.nilStores {
				var err error
				s, err = CacheStores(context.Background(), tt.informers)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("CacheStores error %v, want one saying %q", err, tt.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Look(context.Background(), reader)
			if err != nil {
				t.Fatal(err)
			}
			byKind := names(got)
			for _, o := range objs {
				kind := kindOf(o)
				found := false
				for _, n := range byKind[kind] {
					found = found || n == o.GetName()
				}
				if !found {
					t.Errorf("%s %s missing from the look: %v", kind, o.GetName(), byKind[kind])
				}
			}
			if n := len(byKind["Pod"]); n != 2 {
				t.Errorf("%d pods, want 2", n)
			}
			if tt.same {
				for _, p := range got.Cluster.Pods {
					if !isOneOf(p, objs) {
						t.Errorf("pod %s is a copy, want the store's own object", p.Name)
					}
				}
			}
		})
	}
}

func isOneOf(p *corev1.Pod, objs []client.Object) bool {
	for _, o := range objs {
		if q, ok := o.(*corev1.Pod); ok && q == p {
			return true
		}
	}
	return false
}

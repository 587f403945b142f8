package planner

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/disruption/drift"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/snapshot"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

var catalog = kwok.Build(kwok.BuiltinCatalog(), kwok.Options{VMMemoryOverheadPercent: instancetype.DefaultVMMemoryOverheadPercent})

func findType(name string) *instancetype.InstanceType {
	for _, it := range catalog {
		if it.Name == name {
			return it
		}
	}
	panic("no instance type " + name)
}

// world is a small cluster built up by a test.
type world struct {
	c   *snapshot.Cluster
	now time.Time
}

func newWorld(pools ...*karpv1.NodePool) *world {
	return &world{c: &snapshot.Cluster{NodePools: pools}, now: t0}
}

// pool is a NodePool that consolidates at once (WhenEmptyOrUnderutilized,
// consolidateAfter 0s) with a budget of 100%.
func pool(name string, mutate ...func(*karpv1.NodePool)) *karpv1.NodePool {
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: &karpv1.NodeClassReference{Group: "nodewright.dev", Kind: "KWOKNodeClass", Name: "default"},
				ExpireAfter:  karpv1.MustParseNillableDuration("720h"),
			}},
			Disruption: karpv1.Disruption{
				ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				ConsolidateAfter:    karpv1.MustParseNillableDuration("0s"),
				Budgets:             []karpv1.Budget{{Nodes: "100%"}},
			},
		},
	}
	for _, m := range mutate {
		m(np)
	}
	return np
}

// node adds an initialized NodeClaim and its node, of an instance type in
// zone-a, created an hour before now and idle since then.
func (w *world) node(name, np, itName, capacityType string) (*karpv1.NodeClaim, *corev1.Node) {
	it := findType(itName)
	var p *karpv1.NodePool
	for _, x := range w.c.NodePools {
		if x.Name == np {
			p = x
		}
	}
	labels := map[string]string{
		karpv1.NodePoolLabelKey: np, corev1.LabelInstanceTypeStable: itName, corev1.LabelTopologyZone: "zone-a",
		karpv1.CapacityTypeLabelKey: capacityType, corev1.LabelHostname: name, corev1.LabelArchStable: it.Requirements.Get(corev1.LabelArchStable).Values()[0],
		corev1.LabelOSStable: "linux",
	}
	created := metav1.NewTime(w.now.Add(-time.Hour))
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: created, Annotations: map[string]string{}},
		Spec: karpv1.NodeClaimSpec{ExpireAfter: p.Spec.Template.Spec.ExpireAfter,
			TerminationGracePeriod: p.Spec.Template.Spec.TerminationGracePeriod},
		Status: karpv1.NodeClaimStatus{NodeName: name, ProviderID: "kwok://" + name, Allocatable: it.Allocatable(),
			Conditions: []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: "True", LastTransitionTime: created}}},
	}
	drift.Stamp(nc, p)
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: created},
		Spec:       corev1.NodeSpec{ProviderID: "kwok://" + name},
		Status:     corev1.NodeStatus{Allocatable: it.Allocatable(), Capacity: it.Capacity},
	}
	w.c.NodeClaims = append(w.c.NodeClaims, nc)
	w.c.Nodes = append(w.c.Nodes, n)
	return nc, n
}

// pod binds a running pod of a ReplicaSet to node.
func (w *world) pod(node, cpu, mem string, annotations map[string]string) *corev1.Pod {
	name := fmt.Sprintf("pod-%d", len(w.c.Pods))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), Annotations: annotations,
			Labels:            map[string]string{"app": "web"},
			CreationTimestamp: metav1.NewTime(w.now.Add(-30 * time.Minute)),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs", Controller: ptr(true)}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ptr(metav1.NewTime(w.now.Add(-30 * time.Minute)))},
	}
	w.c.Pods = append(w.c.Pods, p)
	return p
}

func ptr[T any](v T) *T { return &v }

func (w *world) decide(opts ...func(*Input)) *Plan {
	types := snapshot.PoolTypes{}
	for _, np := range w.c.NodePools {
		types[np.Name] = catalog
	}
	in := Input{Cluster: w.c, PoolTypes: types, Now: w.now, Options: DefaultOptions()}
	for _, o := range opts {
		o(&in)
	}
	return Decide(in)
}

func doNotDisrupt(v string) map[string]string {
	return map[string]string{karpv1.DoNotDisruptAnnotationKey: v}
}

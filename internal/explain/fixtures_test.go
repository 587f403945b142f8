package explain

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/cloudprovider/offline"
	"github.com/nodewright/nodewright/internal/disruption/drift"
	"github.com/nodewright/nodewright/internal/instancetype"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata with the current output")

// now is the fixtures' clock: a Monday, 12:00 UTC.
var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run go test -run %s -update to create it", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// sources is a small cluster that a test builds up.
type sources struct{ Sources }

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
				ConsolidateAfter:    karpv1.MustParseNillableDuration("10m"),
			},
		},
	}
	for _, m := range mutate {
		m(np)
	}
	return np
}

func onlyTypes(names ...string) func(*karpv1.NodePool) {
	return func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
			NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: names}})
	}
}

// node adds an initialized NodeClaim of pool np and its node, created an
// hour before now; idle is how long ago its last pod event was.
func (s *sources) node(name string, np *karpv1.NodePool, itName string, idle time.Duration) (*karpv1.NodeClaim, *corev1.Node) {
	labels := map[string]string{
		karpv1.NodePoolLabelKey: np.Name, corev1.LabelInstanceTypeStable: itName, corev1.LabelTopologyZone: "zone-a",
		karpv1.CapacityTypeLabelKey: "on-demand", corev1.LabelHostname: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
	}
	created := metav1.NewTime(now.Add(-time.Hour))
	var it *instancetype.InstanceType
	for _, x := range kwok.Build(kwok.BuiltinCatalog(), kwok.Options{VMMemoryOverheadPercent: instancetype.DefaultVMMemoryOverheadPercent}) {
		if x.Name == itName {
			it = x
		}
	}
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: created, Annotations: map[string]string{}},
		Spec:       karpv1.NodeClaimSpec{ExpireAfter: np.Spec.Template.Spec.ExpireAfter},
		Status: karpv1.NodeClaimStatus{NodeName: name, ProviderID: "kwok://" + name, Allocatable: it.Allocatable(), Capacity: it.Capacity,
			LastPodEventTime: metav1.NewTime(now.Add(-idle)),
			Conditions:       []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: "True", LastTransitionTime: created}}},
	}
	drift.Stamp(nc, np)
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: created},
		Spec:       corev1.NodeSpec{ProviderID: "kwok://" + name},
		Status:     corev1.NodeStatus{Allocatable: it.Allocatable(), Capacity: it.Capacity},
	}
	s.Cluster.NodeClaims = append(s.Cluster.NodeClaims, nc)
	s.Cluster.Nodes = append(s.Cluster.Nodes, n)
	return nc, n
}

// pod adds a pod of Deployment app; on "" it is pending and kube-scheduler
// found no node for it.
func (s *sources) pod(name, app, node, cpu, mem string, annotations map[string]string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), Annotations: annotations,
			Labels:            map[string]string{"app": app},
			CreationTimestamp: metav1.NewTime(now.Add(-30 * time.Minute)),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app, UID: types.UID(app), Controller: ptr(true)}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ptr(metav1.NewTime(now.Add(-30 * time.Minute))),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if node == "" {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
	}
	s.Cluster.Pods = append(s.Cluster.Pods, p)
	return p
}

// daemonSet adds a DaemonSet that runs everywhere and requests mem.
func (s *sources) daemonSet(name, mem string) {
	s.Cluster.DaemonSets = append(s.Cluster.DaemonSets, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)}}}}}}},
	})
}

// pdb adds a PodDisruptionBudget over app that allows no disruption now.
func (s *sources) pdb(name, app string) {
	s.PDBs = append(s.PDBs, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1},
	})
}

func overlay(name, itName, memory string) *karpv1alpha1.NodeOverlay {
	return &karpv1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1alpha1.NodeOverlaySpec{
			Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{itName}}},
			Capacity:     corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)},
		},
	}
}

// input resolves the sources against the built-in catalog, as offline
// explain does.
func (s *sources) input(t *testing.T) Input {
	t.Helper()
	cp, err := offline.New(offline.Options{AnyClass: true})
	if err != nil {
		t.Fatal(err)
	}
	in := Resolve(context.Background(), &s.Sources, cp, nil, true)
	in.Now = now
	return in
}

func ptr[T any](v T) *T { return &v }

package livetest

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/explain"
	"github.com/nodewright/nodewright/internal/testcluster"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := cluster.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func explainPod(t *testing.T, ns, name string) string {
	t.Helper()
	in, err := explain.Live(context.Background(), cluster.Client, nil, "nodewright")
	if err != nil {
		t.Fatal(err)
	}
	in.Now = time.Now()
	ex, err := explain.Pod(in, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ex.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestLivePodNeedsOverlay reads the cluster through the API server, as
// `nodewright explain pod` does without -f: the 240Gi pod does not fit the
// NodePool's r5a.8xlarge until a NodeOverlay states its real memory.
func TestLivePodNeedsOverlay(t *testing.T) {
	ctx := context.Background()
	create(t,
		&kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&karpv1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Name: "memory"},
			Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.SchemeGroupVersion.Group, Kind: "KWOKNodeClass", Name: "default"},
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
					{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"r5a.8xlarge"}}},
					{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}}},
				},
			}}},
		},
	)
	big := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "big"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("240Gi")}}}}},
	}
	create(t, big)
	big.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	if err := cluster.Client.Status().Update(ctx, big); err != nil {
		t.Fatal(err)
	}

	got := explainPod(t, "default", "big")
	for _, want := range []string{
		"Decision: unschedulable",
		"r5a.8xlarge $1.8080/h: does not fit: memory: pod 245760Mi > allocatable: 262144Mi - 19661Mi (7.5%) - 2829Mi kube-reserved - 100Mi eviction = 239554Mi",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("without the overlay, output lacks %q:\n%s", want, got)
		}
	}

	create(t, &karpv1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "r5a-real-memory"},
		Spec: karpv1alpha1.NodeOverlaySpec{
			Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"r5a.8xlarge"}}},
			Capacity:     corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Gi")},
		},
	})
	got = explainPod(t, "default", "big")
	if want := "Decision: launch a NodeClaim of NodePool memory at $1.8080/h"; !strings.Contains(got, want) {
		t.Errorf("with the overlay, output lacks %q:\n%s", want, got)
	}
}

// TestLiveNodeShowsDoNotDisruptPod: a node of the NodePool with a
// do-not-disrupt pod is kept, and explain node says so.
func TestLiveNodeShowsDoNotDisruptPod(t *testing.T) {
	ctx := context.Background()
	create(t, &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "ci"},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.SchemeGroupVersion.Group, Kind: "KWOKNodeClass", Name: "ci"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
				Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}}}},
		}}},
	})
	labels := map[string]string{karpv1.NodePoolLabelKey: "ci", corev1.LabelInstanceTypeStable: "m5.large",
		corev1.LabelTopologyZone: "zone-a", karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand}
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "ci-node", Labels: labels},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.SchemeGroupVersion.Group, Kind: "KWOKNodeClass", Name: "ci"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
				Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}}}},
		},
	}
	create(t, nc)
	nc.Status.ProviderID = kwok.ProviderIDPrefix + nc.Name
	nc.Status.NodeName = nc.Name
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"})
	if err := cluster.Client.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	create(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID}})
	create(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "runner", Annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}},
		Spec:       corev1.PodSpec{NodeName: nc.Name, Containers: []corev1.Container{{Name: "c", Image: "runner"}}},
	})

	in, err := explain.Live(ctx, cluster.Client, nil, "nodewright")
	if err != nil {
		t.Fatal(err)
	}
	in.Now = time.Now()
	ex, err := explain.Node(in, nc.Name)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ex.WriteText(&b, in.Now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Node ci-node (NodeClaim ci-node)",
		"Decision: kept, because:",
		`DoNotDisrupt: pod default/runner has karpenter.sh/do-not-disrupt: "true"`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

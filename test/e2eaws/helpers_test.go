package e2eaws

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/testkube"
)

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}}
}

func namespace(t *testing.T, name string) {
	t.Helper()
	if err := kc.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// deployment creates a Deployment of pause pods with app=name.
func deployment(t *testing.T, ns, name string, replicas int32, selector map[string]string, cpu, memory string) {
	t.Helper()
	labels := map[string]string{"app": name}
	zero := int64(0)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				NodeSelector:                  selector,
				TerminationGracePeriodSeconds: &zero,
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}}},
			}},
		},
	}
	if err := kc.Create(context.Background(), d); err != nil {
		t.Fatalf("creating Deployment %s/%s: %v", ns, name, err)
	}
}

func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	// The Deployment controller writes the object too; retry on conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := kc.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		d.Spec.Replicas = &replicas
		return kc.Update(context.Background(), d)
	})
	if err != nil {
		t.Fatalf("scaling %s/%s to %d: %v", ns, name, replicas, err)
	}
}

// podCounts counts a namespace's pods that are Running on a node, and the rest.
func podCounts(ns string) (running, other int, err error) { return testkube.PodCounts(kc, ns) }

// waitRunning waits until want pods of ns are Running, bound by kube-scheduler.
func waitRunning(t *testing.T, ns string, want int, timeout time.Duration) {
	t.Helper()
	testkube.WaitRunning(t, kc, ns, want, timeout)
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	testkube.Eventually(t, timeout, what, cond)
}

func claims(t *testing.T) []karpv1.NodeClaim {
	t.Helper()
	var l karpv1.NodeClaimList
	if err := kc.List(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

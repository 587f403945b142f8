package e2eaws

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/devcluster"
)

// kubelets plays the kubelet of every instance moto launched for a
// NodeClaim, and the cloud controller manager's node lifecycle: a Node
// registers (with the unregistered taint, as the user data asks) once its
// instance runs, and goes once its instance is gone.
type kubelets struct {
	ec2  *ec2.Client
	mu   sync.Mutex
	seen map[string]time.Time // instance -> when its Node registered
}

func startKubelets(t *testing.T, api *ec2.Client) *kubelets {
	k := &kubelets{ec2: api, seen: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := k.step(ctx); err != nil && ctx.Err() == nil {
				t.Logf("kubelet harness: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return k
}

func instanceOf(providerID string) string {
	return providerID[strings.LastIndex(providerID, "/")+1:]
}

func (k *kubelets) step(ctx context.Context) error {
	var claims karpv1.NodeClaimList
	if err := kc.List(ctx, &claims); err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := kc.List(ctx, &nodes); err != nil {
		return err
	}
	out, err := k.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	if err != nil {
		return err
	}
	running := map[string]ec2types.Instance{}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			if i.State.Name == ec2types.InstanceStateNamePending || i.State.Name == ec2types.InstanceStateNameRunning {
				running[aws.ToString(i.InstanceId)] = i
			}
		}
	}
	registered := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !strings.HasPrefix(n.Spec.ProviderID, "aws:///") {
			continue
		}
		id := instanceOf(n.Spec.ProviderID)
		registered[id] = true
		if _, ok := running[id]; !ok && n.DeletionTimestamp == nil {
			// The instance is gone: the cloud controller manager deletes its Node.
			if err := kc.Delete(ctx, n); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	for i := range claims.Items {
		c := &claims.Items[i]
		if !strings.HasPrefix(c.Status.ProviderID, "aws:///") || c.DeletionTimestamp != nil {
			continue
		}
		id := instanceOf(c.Status.ProviderID)
		inst, ok := running[id]
		if !ok || registered[id] || c.Status.Allocatable == nil {
			continue
		}
		if err := k.register(ctx, c, inst); err != nil {
			return err
		}
	}
	return nil
}

// register creates the Node of inst as its kubelet would: named by its
// private DNS name, with the labels and taints its user data gives it and
// the capacity of its type.
func (k *kubelets) register(ctx context.Context, c *karpv1.NodeClaim, inst ec2types.Instance) error {
	name := aws.ToString(inst.PrivateDnsName)
	if name == "" {
		name = aws.ToString(inst.InstanceId)
	}
	labels := maps.Clone(c.Labels)
	labels[corev1.LabelHostname] = name
	taints := append([]corev1.Taint{karpv1.UnregisteredNoExecuteTaint}, c.Spec.Taints...)
	taints = append(taints, c.Spec.StartupTaints...)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
			Annotations: map[string]string{devcluster.ManagedNodeAnnotation: devcluster.ManagedNodeAnnotationValue}},
		Spec:   corev1.NodeSpec{ProviderID: c.Status.ProviderID, Taints: taints},
		Status: corev1.NodeStatus{Capacity: c.Status.Capacity.DeepCopy(), Allocatable: c.Status.Allocatable.DeepCopy()},
	}
	if err := kc.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	k.mu.Lock()
	k.seen[aws.ToString(inst.InstanceId)] = time.Now()
	k.mu.Unlock()
	return nil
}

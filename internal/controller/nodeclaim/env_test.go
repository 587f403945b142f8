package nodeclaim

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/controller/nodeoverlay"
	"github.com/nodewright/nodewright/internal/controller/nodepool"
	"github.com/nodewright/nodewright/internal/testcluster"
	"github.com/nodewright/nodewright/internal/testkube"
)

// The test API server has no kubelet, kwok or kube-controller-manager: a
// Node is Ready when a test says so, and the provisioner is not running, so
// tests make NodeClaims as it does.

// runControllers runs what the operator wires around NodeClaims, against
// the test API server, until the test ends: the lifecycle controller with
// opts and the kwok provider (whose instances are Node objects), the
// NodePool status controller and the NodeOverlay status controller. The
// first two share a fresh record of registration outcomes, returned.
func runControllers(t *testing.T, opts Options) *nodepool.Registrations {
	t.Helper()
	return runControllersWith(t, opts, nil)
}

// runControllersWith is runControllers with the lifecycle controller's
// provider wrapped by wrap, when not nil.
func runControllersWith(t *testing.T, opts Options, wrap func(cloudprovider.CloudProvider) cloudprovider.CloudProvider) *nodepool.Registrations {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{
		Scheme:                 testcluster.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := SetupIndexes(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	provider, err := kwok.New(mgr.GetClient(), kwok.ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg := &nodepool.Registrations{}
	var cloud cloudprovider.CloudProvider = provider
	if wrap != nil {
		cloud = wrap(provider)
	}
	lifecycle := &Controller{Client: mgr.GetClient(), Cloud: cloud, Recorder: mgr.GetEventRecorderFor("nodewright"), Opts: opts, Registrations: reg}
	if err := lifecycle.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	if err := (&nodepool.Controller{Client: mgr.GetClient(), Cloud: provider, Registrations: reg}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := (&nodeoverlay.Controller{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("manager stopped with error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("manager did not stop within 30s")
		}
	})
	return reg
}

// createClass makes a KWOKNodeClass whose instances' Nodes appear after
// delay (0: at launch).
func createClass(t *testing.T, name string, delay time.Duration) {
	t.Helper()
	class := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if delay > 0 {
		class.Spec.Faults = &kwokv1alpha1.KWOKFaults{RegistrationDelay: &metav1.Duration{Duration: delay}}
	}
	if err := cluster.Client.Create(context.Background(), class); err != nil {
		t.Fatalf("creating KWOKNodeClass %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), class) })
}

// createPool makes a NodePool of class with the given consolidateAfter and
// weight (0: none).
func createPool(t *testing.T, name, class, consolidateAfter string, weight int32) *karpv1.NodePool {
	t.Helper()
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: karpv1.NodePoolSpec{
		Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: class},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{}}},
		Disruption: karpv1.Disruption{ConsolidateAfter: karpv1.MustParseNillableDuration(consolidateAfter)},
	}}
	if weight > 0 {
		np.Spec.Weight = &weight
	}
	if err := cluster.Client.Create(context.Background(), np); err != nil {
		t.Fatalf("creating NodePool %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), np) })
	return np
}

// createClaim makes a NodeClaim of np as the provisioner does (label, owner
// reference, requirements, requests), for an on-demand m5.large in zone-a.
func createClaim(t *testing.T, np *karpv1.NodePool, name string) *karpv1.NodeClaim {
	t.Helper()
	in := func(key string, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
		return karpv1.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}
	}
	block := true
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: np.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodePool", Name: np.Name, UID: np.UID, BlockOwnerDeletion: &block}},
			Finalizers:      []string{karpv1.TerminationFinalizer}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: np.Spec.Template.Spec.NodeClassRef,
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				in(corev1.LabelInstanceTypeStable, "m5.large"), in(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand), in(corev1.LabelTopologyZone, "zone-a")},
			Resources: karpv1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
		},
	}
	if err := cluster.Client.Create(context.Background(), nc); err != nil {
		t.Fatalf("creating NodeClaim %s: %v", name, err)
	}
	t.Cleanup(func() { release(t, name) })
	return nc
}

// release lets a NodeClaim and its Node go without the termination
// controller, which these tests do not run.
func release(t *testing.T, name string) {
	ctx := context.Background()
	_ = cluster.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	nc := &karpv1.NodeClaim{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		return
	}
	nc.Finalizers = nil
	if err := cluster.Client.Update(ctx, nc); err != nil {
		t.Logf("releasing NodeClaim %s: %v", name, err)
	}
	_ = cluster.Client.Delete(ctx, nc)
}

// markReady reports a node Ready, as its kubelet (kwok) would, and takes
// off the not-ready taint the API server put on it at creation, as
// kube-controller-manager would.
func markReady(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	testkube.Eventually(t, 30*time.Second, "node "+name+" marked Ready", func() (bool, error) {
		n := &corev1.Node{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return false, err
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if err := cluster.Client.Status().Update(ctx, n); err != nil {
			return false, err
		}
		var taints []corev1.Taint
		for _, x := range n.Spec.Taints {
			if x.Key != corev1.TaintNodeNotReady {
				taints = append(taints, x)
			}
		}
		n.Spec.Taints = taints
		err := cluster.Client.Update(ctx, n)
		return err == nil, err
	})
}

// waitClaim waits until the named NodeClaim satisfies cond and returns it.
func waitClaim(t *testing.T, name, what string, cond func(*karpv1.NodeClaim) bool) *karpv1.NodeClaim {
	t.Helper()
	nc := &karpv1.NodeClaim{}
	testkube.Eventually(t, 60*time.Second, fmt.Sprintf("NodeClaim %s: %s", name, what), func() (bool, error) {
		if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
			return false, err
		}
		return cond(nc), fmt.Errorf("conditions %+v, lastPodEventTime %s", nc.Status.Conditions, nc.Status.LastPodEventTime)
	})
	return nc
}

// waitPool waits until the named NodePool satisfies cond and returns it.
func waitPool(t *testing.T, name, what string, cond func(*karpv1.NodePool) bool) *karpv1.NodePool {
	t.Helper()
	np := &karpv1.NodePool{}
	testkube.Eventually(t, 60*time.Second, fmt.Sprintf("NodePool %s: %s", name, what), func() (bool, error) {
		if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: name}, np); err != nil {
			return false, err
		}
		return cond(np), fmt.Errorf("generation %d, conditions %+v", np.Generation, np.Status.Conditions)
	})
	return np
}

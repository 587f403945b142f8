package termination

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/controller/nodeclaim"
	"github.com/nodewright/nodewright/internal/learned"
	"github.com/nodewright/nodewright/internal/testcluster"
)

// The API server has no kubelet, scheduler or controller manager: a pod
// evicted or deleted with a grace period stays terminating until a test
// removes it, one with terminationGracePeriodSeconds 0 goes at once, and
// PodDisruptionBudget status is written by the tests.

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

// testOptions keep backoffs short so that tests run in seconds.
func testOptions() Options {
	o := DefaultOptions()
	o.EvictionRetryMin, o.EvictionRetryMax = 200*time.Millisecond, time.Second
	o.Resync = 5 * time.Second
	return o
}

// start runs the NodeClaim lifecycle controller (with the kwok provider,
// whose instances are Node objects) and the termination controller, as the
// operator wires them, until the returned stop is called.
func start(t *testing.T, opts Options) (stop func()) {
	t.Helper()
	return startWith(t, opts, false)
}

// startWith is start, with the drain's room check (Room) when room is set.
func startWith(t *testing.T, opts Options, room bool) (stop func()) {
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
	if err := nodeclaim.SetupIndexes(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	if err := SetupIndexes(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	provider, err := kwok.New(mgr.GetClient(), kwok.ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recorder := mgr.GetEventRecorderFor("nodewright")
	lifecycle := &nodeclaim.Controller{Client: mgr.GetClient(), Cloud: provider, Learned: learned.NewStore(cluster.Client, "default"),
		Recorder: recorder, Opts: nodeclaim.DefaultOptions()}
	if err := lifecycle.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	term := &Controller{Client: mgr.GetClient(), Recorder: recorder, Opts: opts}
	if room {
		term.Room = &Room{Client: mgr.GetClient(), Cloud: provider, Learned: learned.NewStore(cluster.Client, "default"), MaxAge: 2 * time.Second}
	}
	if err := term.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("manager stopped with error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("manager did not stop within 30s")
		}
	}
	t.Cleanup(stop)
	return stop
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last: %v)", timeout, what, last)
}

// consistently fails if cond turns false within the window.
func consistently(t *testing.T, window time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(window)
	for time.Now().Before(deadline) {
		if ok, err := cond(); !ok {
			t.Fatalf("%s stopped holding: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// launched creates a NodeClaim that is launched, registered and initialized,
// and its kwok node.
func launched(t *testing.T, name string, grace *time.Duration) *karpv1.NodeClaim {
	t.Helper()
	ctx := context.Background()
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{karpv1.TerminationFinalizer},
			Labels: map[string]string{karpv1.NodePoolLabelKey: "termination"}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.SchemeGroupVersion.Group, Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
				Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}}}},
		},
	}
	if grace != nil {
		nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: *grace}
	}
	if err := cluster.Client.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID = kwok.ProviderIDPrefix + name
	nc.Status.NodeName = name
	for _, typ := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized, karpv1.ConditionTypeReady} {
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: typ})
	}
	if err := cluster.Client.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{kwok.NodeClaimAnnotation: name},
			Labels: map[string]string{karpv1.NodePoolLabelKey: "termination", karpv1.NodeRegisteredLabelKey: "true"}},
		Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID},
	}
	if err := cluster.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		var pods corev1.PodList
		_ = cluster.Client.List(ctx, &pods, client.MatchingFields{PodNodeNameField: name})
		for i := range pods.Items {
			forceDelete(t, &pods.Items[i])
		}
		_ = cluster.Client.Delete(ctx, node)
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc); err == nil {
			nc.Finalizers = nil
			_ = cluster.Client.Update(ctx, nc)
			_ = cluster.Client.Delete(ctx, nc)
		}
	})
	return nc
}

type podOption func(*corev1.Pod)

func gracePeriodSeconds(s int64) podOption {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &s }
}

func labelled(k, v string) podOption {
	return func(p *corev1.Pod) { p.Labels = map[string]string{k: v} }
}

func ownedByDaemonSet(p *corev1.Pod) {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds-uid", Controller: &yes}}
}

func systemNodeCritical(p *corev1.Pod) {
	p.Spec.PriorityClassName = "system-node-critical"
	prio := int32(2000001000)
	p.Spec.Priority = &prio
}

func annotatedDoNotDisrupt(p *corev1.Pod) {
	p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
}

func toleratingEverything(p *corev1.Pod) {
	p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
}

func mountingClaim(claim string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	}
}

// runningPod creates a pod bound to node, Running and Ready as a kubelet
// would report it, so that PodDisruptionBudgets count it.
func runningPod(t *testing.T, node, name string, opts ...podOption) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "x"}},
			PriorityClassName: ""},
	}
	for _, o := range opts {
		o(p)
	}
	if err := cluster.Client.Create(ctx, p); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if err := cluster.Client.Status().Update(ctx, p); err != nil {
		t.Fatalf("marking pod %s running: %v", name, err)
	}
	return p
}

// forceDelete plays the kubelet confirming a pod is gone.
func forceDelete(t *testing.T, p *corev1.Pod) {
	t.Helper()
	err := cluster.Client.Delete(context.Background(), p, client.GracePeriodSeconds(0))
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting pod %s: %v", p.Name, err)
	}
}

func getPod(name string) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	err := cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p)
	return p, err
}

// evicted reports whether a pod is terminating or gone.
func evicted(name string) (bool, error) {
	p, err := getPod(name)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return p.DeletionTimestamp != nil, fmt.Errorf("pod %s not terminating", name)
}

func untouched(name string) (bool, error) {
	p, err := getPod(name)
	if err != nil {
		return false, err
	}
	return p.DeletionTimestamp == nil, fmt.Errorf("pod %s is terminating", name)
}

func gone(obj client.Object) func() (bool, error) {
	return func() (bool, error) {
		err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("%s still there (%v)", obj.GetName(), err)
	}
}

func exists(obj client.Object) func() (bool, error) {
	return func() (bool, error) {
		err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		return err == nil, err
	}
}

func deleteClaim(t *testing.T, nc *karpv1.NodeClaim) {
	t.Helper()
	if err := cluster.Client.Delete(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
}

func getClaim(t *testing.T, name string) *karpv1.NodeClaim {
	t.Helper()
	nc := &karpv1.NodeClaim{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatalf("getting NodeClaim %s: %v", name, err)
	}
	return nc
}

// pdb creates a PodDisruptionBudget over pods labelled app=app and writes
// the status the disruption controller would: allowed disruptions.
func pdb(t *testing.T, name, app string, allowed int32) *policyv1.PodDisruptionBudget {
	t.Helper()
	ctx := context.Background()
	one := intstr.FromInt32(1)
	b := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
	}
	if err := cluster.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), b) })
	setAllowed(t, b, allowed)
	return b
}

func setAllowed(t *testing.T, b *policyv1.PodDisruptionBudget, allowed int32) {
	t.Helper()
	ctx := context.Background()
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	b.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: b.Generation, DisruptionsAllowed: allowed,
		CurrentHealthy: 1 + allowed, DesiredHealthy: 1, ExpectedPods: 1 + allowed}
	if err := cluster.Client.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
}

// events lists the reasons and messages of the events about an object.
func events(name string) ([]string, error) {
	var l corev1.EventList
	if err := cluster.Client.List(context.Background(), &l, client.MatchingFields{"involvedObject.name": name}); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range l.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out, nil
}

func hasEvent(name, reason, contains string) func() (bool, error) {
	return func() (bool, error) {
		es, err := events(name)
		if err != nil {
			return false, err
		}
		for _, e := range es {
			if strings.HasPrefix(e, reason+": ") && strings.Contains(e, contains) {
				return true, nil
			}
		}
		return false, fmt.Errorf("events of %s: %q", name, es)
	}
}

func condition(t *testing.T, name, typ string) *metav1.Condition {
	t.Helper()
	return meta.FindStatusCondition(getClaim(t, name).Status.Conditions, typ)
}

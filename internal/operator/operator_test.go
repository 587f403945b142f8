package operator

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/controller/nodeclaim"
	"github.com/nodewright/nodewright/internal/learned"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/testcluster"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

// startController runs the whole controller against the envtest API server
// (no kube-scheduler, no kwok) until the returned stop is called.
func startController(t *testing.T, mutate func(*Options)) (stop func()) {
	t.Helper()
	o := DefaultOptions()
	o.Config = cluster.Config
	o.LeaderElect = false
	o.MetricsAddr, o.ProbeAddr = "0", "0"
	o.Provisioning.BatchIdle, o.Provisioning.BatchMax = 200*time.Millisecond, 2*time.Second
	o.Provisioning.Resync = time.Second
	o.GCInterval = time.Second
	o.Disruption.Interval = time.Second
	o.SkipControllerNameValidation = true
	if mutate != nil {
		mutate(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("controller stopped with error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("controller did not stop within 30s")
		}
	}
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
	t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
}

// consistently fails if cond turns false within the window: a claim that
// stays true over time, e.g. "no second NodeClaim is created".
func consistently(t *testing.T, window time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(window)
	for time.Now().Before(deadline) {
		ok, err := cond()
		if !ok {
			t.Fatalf("%s stopped holding: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func setup(t *testing.T, pool string, mutate func(*karpv1.NodePool)) {
	t.Helper()
	ctx := context.Background()
	nc := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: pool}}
	if err := cluster.Client.Create(ctx, nc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.SchemeGroupVersion.Group, Kind: "KWOKNodeClass", Name: pool},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}},
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
			},
		}}},
	}
	if mutate != nil {
		mutate(np)
	}
	if err := cluster.Client.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanupPool(t, pool) })
}

// cleanupPool removes a test's NodePool, its claims (finalizers dropped) and
// nodes so tests do not see each other's objects.
func cleanupPool(t *testing.T, pool string) {
	ctx := context.Background()
	var claims karpv1.NodeClaimList
	_ = cluster.Client.List(ctx, &claims, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	for i := range claims.Items {
		nc := &claims.Items[i]
		nc.Finalizers = nil
		_ = cluster.Client.Update(ctx, nc)
		_ = cluster.Client.Delete(ctx, nc)
	}
	var nodes corev1.NodeList
	_ = cluster.Client.List(ctx, &nodes, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	for i := range nodes.Items {
		_ = cluster.Client.Delete(ctx, &nodes.Items[i])
	}
	_ = cluster.Client.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}})
	_ = cluster.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("default"), client.MatchingLabels{"test-pool": pool}, client.GracePeriodSeconds(0))
}

// pendingPods creates pods and marks them unschedulable, as kube-scheduler
// would.
func pendingPods(t *testing.T, pool string, n int, cpu string) []*corev1.Pod {
	t.Helper()
	ctx := context.Background()
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-%d", pool, i), Labels: map[string]string{"test-pool": pool}},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{karpv1.NodePoolLabelKey: pool},
				Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi")}}}},
			},
		}
		if err := cluster.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now()}}
		if err := cluster.Client.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// squat binds a pod to node that takes all of its CPU but 50m, as a pod
// kube-scheduler placed there against the plan would.
func squat(t *testing.T, pool string, node *corev1.Node) {
	t.Helper()
	take := node.Status.Allocatable[corev1.ResourceCPU].DeepCopy()
	take.Sub(resource.MustParse("50m"))
	squatter := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: pool + "-squatter", Labels: map[string]string{"test-pool": pool}},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: take, corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
	}
	if err := cluster.Client.Create(context.Background(), squatter); err != nil {
		t.Fatal(err)
	}
}

func claimsOf(pool string) ([]karpv1.NodeClaim, error) {
	var l karpv1.NodeClaimList
	err := cluster.Client.List(context.Background(), &l, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	return l.Items, err
}

// reportReady writes the node's Ready condition, the kubelet's part only.
func reportReady(t *testing.T, name string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := cluster.Client.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// setNodeReady writes the node's Ready condition and, as
// kube-controller-manager would, lifts its not-ready taint.
func setNodeReady(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	n := reportReady(t, name)
	// kube-controller-manager would lift the not-ready taint now. The
	// controller lifts it too, from a Ready node, so the node may have
	// changed since it was read: read it again and lift what is left.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		var taints []corev1.Taint
		for _, taint := range n.Spec.Taints {
			if taint.Key != corev1.TaintNodeNotReady {
				taints = append(taints, taint)
			}
		}
		if len(taints) == len(n.Spec.Taints) {
			return nil
		}
		n.Spec.Taints = taints
		return cluster.Client.Update(ctx, n)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestProvisionLaunchRegisterInitialize(t *testing.T) {
	const pool = "lifecycle"
	setup(t, pool, nil)
	stop := startController(t, func(o *Options) { o.Lifecycle.WriteNominatedNodeName = true })
	defer stop()
	pods := pendingPods(t, pool, 5, "100m")

	var claim karpv1.NodeClaim
	eventually(t, 30*time.Second, "a launched and registered NodeClaim", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil || len(cs) == 0 {
			return false, err
		}
		claim = cs[0]
		return meta.IsStatusConditionTrue(claim.Status.Conditions, karpv1.ConditionTypeRegistered), fmt.Errorf("%d claims, conditions %v", len(cs), claim.Status.Conditions)
	})
	cs, _ := claimsOf(pool)
	if len(cs) != 1 {
		for _, c := range cs {
			t.Logf("claim %s created %s nominated %q requests %v", c.Name, c.CreationTimestamp, c.Annotations[snapshot.NominatedPodsAnnotation], c.Spec.Resources.Requests)
		}
		t.Fatalf("5 small pods should need one NodeClaim, got %d", len(cs))
	}
	nominated := map[string]bool{}
	for _, uid := range snapshot.Nominations(claim.Annotations[snapshot.NominatedPodsAnnotation]) {
		nominated[string(uid)] = true
	}
	for _, p := range pods {
		if !nominated[string(p.UID)] {
			t.Errorf("pod %s is not nominated to %s (annotation %q)", p.Name, claim.Name, claim.Annotations[snapshot.NominatedPodsAnnotation])
		}
	}
	if claim.Status.ProviderID != "kwok://"+claim.Name || claim.Labels[corev1.LabelInstanceTypeStable] == "" {
		t.Errorf("launched claim lacks providerID or instance type: %q %v", claim.Status.ProviderID, claim.Labels)
	}
	node := &corev1.Node{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: claim.Status.NodeName}, node); err != nil {
		t.Fatalf("registered node: %v", err)
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == karpv1.UnregisteredTaintKey {
			t.Errorf("unregistered taint still on registered node %s", node.Name)
		}
	}
	if node.Labels[karpv1.NodeRegisteredLabelKey] != "true" || node.Labels[karpv1.NodePoolLabelKey] != pool {
		t.Errorf("node labels not synced: %v", node.Labels)
	}
	// The nominations reach kube-scheduler before the node can take pods.
	for _, p := range pods {
		got := &corev1.Pod{}
		if err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		if got.Status.NominatedNodeName != node.Name {
			t.Errorf("pod %s: status.nominatedNodeName %q, want its claim's node %q", p.Name, got.Status.NominatedNodeName, node.Name)
		}
	}
	// kube-scheduler clears a pod's nominatedNodeName when it tries the pod
	// before the node can take it; the nomination is written again.
	cleared := &corev1.Pod{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(pods[0]), cleared); err != nil {
		t.Fatal(err)
	}
	cleared.Status.NominatedNodeName = ""
	if err := cluster.Client.Status().Update(context.Background(), cleared); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the cleared nominatedNodeName to be written again", func() (bool, error) {
		got := &corev1.Pod{}
		err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(pods[0]), got)
		return err == nil && got.Status.NominatedNodeName == node.Name, fmt.Errorf("nominatedNodeName %q, err %v", got.Status.NominatedNodeName, err)
	})
	if c := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeInitialized); c == nil || c.Status == metav1.ConditionTrue {
		t.Fatalf("claim initialized before its node was Ready: %v", c)
	}

	// The pods stay pending (no scheduler here), and batches keep running:
	// the nominations must keep any second claim from being made.
	// Nor is the Initialized message rewritten at each step of a node's
	// first seconds: that costs a burst of nodes writes and says nothing.
	consistently(t, 4*time.Second, "one NodeClaim for nominated pods, its Initialized message as registration wrote it", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil || len(cs) != 1 {
			return false, fmt.Errorf("%d claims, err %v", len(cs), err)
		}
		c := meta.FindStatusCondition(cs[0].Status.Conditions, karpv1.ConditionTypeInitialized)
		return c != nil && c.Message == "node registered; waiting for it to be Ready", fmt.Errorf("Initialized condition %v", c)
	})

	setNodeReady(t, node.Name)
	eventually(t, 20*time.Second, "the claim to be Initialized", func() (bool, error) {
		nc := &karpv1.NodeClaim{}
		if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: claim.Name}, nc); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) &&
			meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeReady), fmt.Errorf("conditions %v", nc.Status.Conditions)
	})

	// Another pod takes nearly all the node's CPU: the nominated pods no
	// longer fit there and are planned again (--replan-displaced-pods), so a
	// cleared nomination is not written back to this node any more.
	squat(t, pool, node)
	released := &corev1.Pod{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(pods[1]), released); err != nil {
		t.Fatal(err)
	}
	released.Status.NominatedNodeName = ""
	if err := cluster.Client.Status().Update(context.Background(), released); err != nil {
		t.Fatal(err)
	}
	consistently(t, 4*time.Second, "a pod its node has no room for left unnominated to it", func() (bool, error) {
		got := &corev1.Pod{}
		err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(pods[1]), got)
		return err == nil && got.Status.NominatedNodeName != node.Name, fmt.Errorf("nominatedNodeName %q, err %v", got.Status.NominatedNodeName, err)
	})
}

func TestRestartKeepsNominations(t *testing.T) {
	const pool = "restart"
	setup(t, pool, nil)
	stop := startController(t, nil)
	pods := pendingPods(t, pool, 3, "100m")
	eventually(t, 30*time.Second, "a NodeClaim", func() (bool, error) {
		cs, err := claimsOf(pool)
		return err == nil && len(cs) == 1, err
	})
	stop()
	stop2 := startController(t, nil)
	defer stop2()
	consistently(t, 4*time.Second, "no second NodeClaim after a restart", func() (bool, error) {
		cs, err := claimsOf(pool)
		return err == nil && len(cs) == 1, fmt.Errorf("%d claims", len(cs))
	})
	// By default the nominations stay nodewright's own: kube-scheduler is
	// not told (--nominate-pods-to-nodes is off).
	eventually(t, 30*time.Second, "the NodeClaim to register", func() (bool, error) {
		cs, err := claimsOf(pool)
		return err == nil && len(cs) == 1 && meta.IsStatusConditionTrue(cs[0].Status.Conditions, karpv1.ConditionTypeRegistered), err
	})
	for _, p := range pods {
		got := &corev1.Pod{}
		if err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		if got.Status.NominatedNodeName != "" {
			t.Errorf("pod %s: status.nominatedNodeName %q written with --nominate-pods-to-nodes off", p.Name, got.Status.NominatedNodeName)
		}
	}
}

func TestGarbageCollection(t *testing.T) {
	const pool = "gc"
	setup(t, pool, nil)
	stop := startController(t, nil)
	defer stop()
	ctx := context.Background()
	// An instance whose NodeClaim is gone: a kwok node naming a claim that
	// does not exist.
	leaked := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "leaked-instance",
		Annotations: map[string]string{kwok.NodeClaimAnnotation: "no-such-claim"},
		Labels:      map[string]string{karpv1.NodePoolLabelKey: pool}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://leaked-instance"}}
	if err := cluster.Client.Create(ctx, leaked); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the leaked instance to be deleted", func() (bool, error) {
		err := cluster.Client.Get(ctx, client.ObjectKey{Name: leaked.Name}, &corev1.Node{})
		return apierrors.IsNotFound(err), err
	})

	// A NodeClaim whose instance is gone: launch one, then delete its node.
	pendingPods(t, pool, 1, "1")
	var claim karpv1.NodeClaim
	eventually(t, 30*time.Second, "a registered NodeClaim", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil || len(cs) == 0 {
			return false, err
		}
		claim = cs[0]
		return claim.Status.NodeName != "", nil
	})
	if err := cluster.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: claim.Status.NodeName}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the orphaned NodeClaim to be deleted", func() (bool, error) {
		nc := &karpv1.NodeClaim{}
		err := cluster.Client.Get(ctx, client.ObjectKey{Name: claim.Name}, nc)
		return apierrors.IsNotFound(err) || (err == nil && nc.DeletionTimestamp != nil), err
	})
}

// staleCache hides one NodeClaim and one Node, as an informer cache that
// has not yet seen them, or has fallen behind a broken watch, would.
type staleCache struct {
	client.Client
	claim, node string
}

func (c staleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Node); ok && key.Name == c.node {
		return apierrors.NewNotFound(corev1.Resource("nodes"), key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c staleCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	switch l := list.(type) {
	case *karpv1.NodeClaimList:
		l.Items = slices.DeleteFunc(l.Items, func(nc karpv1.NodeClaim) bool { return nc.Name == c.claim })
	case *corev1.NodeList:
		l.Items = slices.DeleteFunc(l.Items, func(n corev1.Node) bool { return n.Name == c.node })
	}
	return nil
}

// gcClaim and gcInstance are a NodeClaim of pool and its kwok instance,
// made by hand for the collector to judge.
func gcClaim(t *testing.T, pool string) *karpv1.NodeClaim {
	t.Helper()
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: pool + "-claim", Labels: map[string]string{karpv1.NodePoolLabelKey: pool}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.SchemeGroupVersion.Group, Kind: "KWOKNodeClass", Name: pool},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
				Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}}},
		}}
	if err := cluster.Client.Create(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	return claim
}

func gcInstance(t *testing.T, pool string, claim *karpv1.NodeClaim) *corev1.Node {
	t.Helper()
	instance := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: claim.Name,
		Annotations: map[string]string{kwok.NodeClaimAnnotation: claim.Name},
		Labels:      map[string]string{karpv1.NodePoolLabelKey: pool}},
		Spec: corev1.NodeSpec{ProviderID: kwok.ProviderIDPrefix + claim.Name}}
	if err := cluster.Client.Create(context.Background(), instance); err != nil {
		t.Fatal(err)
	}
	return instance
}

// TestGarbageCollectionConfirmsLive shows that an instance whose NodeClaim the
// cache does not show yet is kept when the API server has the claim, and
// deleted once the claim is really gone.
func TestGarbageCollectionConfirmsLive(t *testing.T) {
	const pool = "gc-live"
	setup(t, pool, nil)
	ctx := context.Background()
	claim := gcClaim(t, pool)
	instance := gcInstance(t, pool, claim)
	provider, err := kwok.New(cluster.Client, kwok.ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gc := &nodeclaim.GarbageCollector{Client: staleCache{Client: cluster.Client, claim: claim.Name}, APIReader: cluster.Client,
		Cloud: provider, Recorder: record.NewFakeRecorder(10), Interval: time.Minute, Grace: time.Minute}

	if err := gc.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(instance), &corev1.Node{}); err != nil {
		t.Fatalf("instance of a claim the API server has but the cache does not show: want kept, got %v", err)
	}

	if err := cluster.Client.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if err := gc.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	err = cluster.Client.Get(ctx, client.ObjectKeyFromObject(instance), &corev1.Node{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("instance whose claim is gone: want deleted, got %v", err)
	}
}

// TestGarbageCollectionKeepsAClaimWhoseNodeTheCacheLacks: a launched claim
// whose node the provider's cache does not show is kept while the API server
// has the node (an API server too busy to keep its watches current must not
// cost running nodes), and deleted once the node is really gone.
func TestGarbageCollectionKeepsAClaimWhoseNodeTheCacheLacks(t *testing.T) {
	const pool = "gc-node-live"
	setup(t, pool, nil)
	ctx := context.Background()
	claim := gcClaim(t, pool)
	claim.Status.ProviderID = kwok.ProviderIDPrefix + claim.Name
	claim.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched",
		LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
	if err := cluster.Client.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	node := gcInstance(t, pool, claim)
	stale := staleCache{Client: cluster.Client, node: node.Name}
	provider, err := kwok.New(stale, kwok.ProviderOptions{LiveReader: cluster.Client})
	if err != nil {
		t.Fatal(err)
	}
	gc := &nodeclaim.GarbageCollector{Client: stale, APIReader: cluster.Client,
		Cloud: provider, Recorder: record.NewFakeRecorder(10), Interval: time.Minute, Grace: time.Minute}

	if err := gc.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	got := &karpv1.NodeClaim{}
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(claim), got); err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("claim whose node the API server has but the cache does not show: want kept, got %v (deleting: %v)", err, got.DeletionTimestamp)
	}

	if err := cluster.Client.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := gc.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	err = cluster.Client.Get(ctx, client.ObjectKeyFromObject(claim), got)
	if !apierrors.IsNotFound(err) && (err != nil || got.DeletionTimestamp == nil) {
		t.Fatalf("claim whose node is gone: want deleted, got %v", err)
	}
}

func TestLearnedCapacityPersists(t *testing.T) {
	const pool = "learn"
	setup(t, pool, nil)
	stop := startController(t, func(o *Options) { o.KWOK.ActualVMMemoryOverheadPercent = 0.05 })
	defer stop()
	pendingPods(t, pool, 1, "1")
	var claim karpv1.NodeClaim
	eventually(t, 30*time.Second, "a registered NodeClaim", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil || len(cs) == 0 {
			return false, err
		}
		claim = cs[0]
		return claim.Status.NodeName != "", nil
	})
	typ := claim.Labels[corev1.LabelInstanceTypeStable]
	eventually(t, 10*time.Second, "learned capacity in the ConfigMap", func() (bool, error) {
		s := learned.NewStore(cluster.Client, "nodewright")
		if err := s.Load(context.Background(), cluster.Client); err != nil {
			return false, err
		}
		e, ok := s.Get(typ)
		if !ok {
			return false, fmt.Errorf("no entry for %s", typ)
		}
		node := &corev1.Node{}
		if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: claim.Status.NodeName}, node); err != nil {
			return false, err
		}
		want := node.Status.Capacity[corev1.ResourceMemory]
		got := e.Capacity[corev1.ResourceMemory]
		return got.Cmp(want) == 0, fmt.Errorf("learned memory %s, node has %s", got.String(), want.String())
	})
}

// TestDisplacedPodsKeepTheirNewNode: with --nominate-displaced-pods, pods
// whose initialized node another pod filled are planned onto a new
// NodeClaim that lists them as displaced, get its node's name in
// status.nominatedNodeName when it registers, and stay held there: no
// third NodeClaim is made for them while their nominatedNodeName names the
// second claim's node and the first claim still lists them too.
func TestDisplacedPodsKeepTheirNewNode(t *testing.T) {
	const pool = "displaced"
	ctx := context.Background()
	setup(t, pool, nil)
	stop := startController(t, func(o *Options) { o.Lifecycle.NominateDisplaced = true })
	defer stop()
	pods := pendingPods(t, pool, 2, "100m")

	var first karpv1.NodeClaim
	eventually(t, 30*time.Second, "a registered NodeClaim", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil || len(cs) != 1 {
			return false, fmt.Errorf("%d claims, err %v", len(cs), err)
		}
		first = cs[0]
		return meta.IsStatusConditionTrue(first.Status.Conditions, karpv1.ConditionTypeRegistered), fmt.Errorf("conditions %v", first.Status.Conditions)
	})
	if v, ok := first.Annotations[snapshot.DisplacedPodsAnnotation]; ok {
		t.Errorf("the first NodeClaim lists displaced pods %q before any were", v)
	}
	setNodeReady(t, first.Status.NodeName)
	eventually(t, 20*time.Second, "the first claim Initialized", func() (bool, error) {
		nc := &karpv1.NodeClaim{}
		err := cluster.Client.Get(ctx, client.ObjectKey{Name: first.Name}, nc)
		return err == nil && meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized), err
	})

	// Another pod takes nearly all of the node's CPU.
	node := &corev1.Node{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: first.Status.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	squat(t, pool, node)

	var second karpv1.NodeClaim
	eventually(t, 30*time.Second, "a second NodeClaim for the displaced pods, registered", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		for _, c := range cs {
			if c.Name != first.Name {
				second = c
				return meta.IsStatusConditionTrue(c.Status.Conditions, karpv1.ConditionTypeRegistered), fmt.Errorf("conditions %v", c.Status.Conditions)
			}
		}
		return false, fmt.Errorf("%d claims", len(cs))
	})
	listed := map[types.UID]bool{}
	for _, uid := range snapshot.Nominations(second.Annotations[snapshot.DisplacedPodsAnnotation]) {
		listed[uid] = true
	}
	for _, p := range pods {
		if !listed[p.UID] {
			t.Errorf("pod %s is not listed as displaced on %s (%q)", p.Name, second.Name, second.Annotations[snapshot.DisplacedPodsAnnotation])
		}
	}
	for _, p := range pods {
		eventually(t, 20*time.Second, "pod "+p.Name+" nominated to the second claim's node", func() (bool, error) {
			got := &corev1.Pod{}
			err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(p), got)
			return err == nil && got.Status.NominatedNodeName == second.Status.NodeName, fmt.Errorf("nominatedNodeName %q, err %v", got.Status.NominatedNodeName, err)
		})
	}
	consistently(t, 3*time.Second, "no third NodeClaim for pods nominated to the second", func() (bool, error) {
		cs, err := claimsOf(pool)
		return err == nil && len(cs) == 2, fmt.Errorf("%d claims, err %v", len(cs), err)
	})
}

// A NodeOverlay that states a type's real memory makes a pod fit that the
// catalog's estimate does not. The provider's Create must judge the claim as
// the solver did: it refused it, the claim was deleted and planned again
// every 2 s, and the pod never ran.
func TestOverlayMadeFitLaunches(t *testing.T) {
	const pool = "overlay-fit"
	ctx := context.Background()
	setup(t, pool, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
			NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"r5a.8xlarge"}}})
	})
	overlay := &karpv1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec: karpv1alpha1.NodeOverlaySpec{
			Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"r5a.8xlarge"}}},
			Capacity:     corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Gi")},
		},
	}
	if err := cluster.Client.Create(ctx, overlay); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), overlay) })
	stop := startController(t, nil)
	defer stop()
	big := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: pool + "-big", Labels: map[string]string{"test-pool": pool}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{karpv1.NodePoolLabelKey: pool},
			Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("240Gi")}}}},
		},
	}
	if err := cluster.Client.Create(ctx, big); err != nil {
		t.Fatal(err)
	}
	big.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now()}}
	if err := cluster.Client.Status().Update(ctx, big); err != nil {
		t.Fatal(err)
	}

	var launched karpv1.NodeClaim
	eventually(t, 30*time.Second, "a launched r5a.8xlarge NodeClaim", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil || len(cs) != 1 {
			return false, fmt.Errorf("%d claims, err %v", len(cs), err)
		}
		launched = cs[0]
		return meta.IsStatusConditionTrue(launched.Status.Conditions, karpv1.ConditionTypeLaunched) &&
			launched.Labels[corev1.LabelInstanceTypeStable] == "r5a.8xlarge", fmt.Errorf("conditions %v", launched.Status.Conditions)
	})
	consistently(t, 5*time.Second, "the same NodeClaim, not deleted and made again", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		return len(cs) == 1 && cs[0].UID == launched.UID && cs[0].DeletionTimestamp == nil, fmt.Errorf("%d claims", len(cs))
	})
}

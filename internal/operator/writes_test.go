package operator

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
)

// writeCounter counts the controller's write requests by method and path.
type writeCounter struct {
	mu    sync.Mutex
	count map[string]int
}

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodGet {
			w.mu.Lock()
			w.count[r.Method+" "+r.URL.Path]++
			w.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (w *writeCounter) get(method, path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count[method+" "+path]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A node that is already Ready and carries no taint but the unregistered one
// when the controller first sees it (a busy controller often reaches a node
// after its kubelet reported Ready) is registered and initialized in one
// node patch and one status patch, not two of each.
func TestNodeReadyAtRegistrationTakesTwoWrites(t *testing.T) {
	const pool, name = "ready-at-registration", "ready-at-registration-a"
	setup(t, pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("Never")
	})
	ctx := context.Background()
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: pool}, Finalizers: []string{karpv1.TerminationFinalizer}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.SchemeGroupVersion.Group, Kind: "KWOKNodeClass", Name: pool},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool}}},
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large"}}},
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}},
			},
			Resources: karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		},
	}
	if err := cluster.Client.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	// The instance comes up before the controller runs: the provider makes
	// its Node, and the "kubelet" reports Ready.
	provider, err := kwok.New(cluster.Client, kwok.ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Create(ctx, claim); err != nil {
		t.Fatalf("launching the instance: %v", err)
	}
	setNodeReady(t, name)

	writes := &writeCounter{count: map[string]int{}}
	stop := startController(t, func(o *Options) {
		// The disruption loop writes its own condition on the claim; it
		// first runs an interval after the start.
		o.Disruption.Interval = time.Hour
		cfg := rest.CopyConfig(o.Config)
		cfg.WrapTransport = writes.wrap
		o.Config = cfg
	})
	defer stop()
	nc := &karpv1.NodeClaim{}
	eventually(t, 30*time.Second, "the claim registered and initialized", func() (bool, error) {
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) &&
			meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeReady), fmt.Errorf("conditions %v", nc.Status.Conditions)
	})
	node := &corev1.Node{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	if node.Labels[karpv1.NodeRegisteredLabelKey] != "true" || node.Labels[karpv1.NodeInitializedLabelKey] != "true" {
		t.Errorf("node labels %v: want %s and %s true", node.Labels, karpv1.NodeRegisteredLabelKey, karpv1.NodeInitializedLabelKey)
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == karpv1.UnregisteredTaintKey {
			t.Errorf("unregistered taint still on node %s", name)
		}
	}
	// Launch writes the claim's labels and its status; registration and
	// initialization then write the node once and the status once.
	if got := writes.get(http.MethodPatch, "/api/v1/nodes/"+name); got != 1 {
		t.Errorf("node patches: %d, want 1", got)
	}
	statusPath := "/apis/karpenter.sh/v1/nodeclaims/" + name + "/status"
	if got := writes.get(http.MethodPatch, statusPath); got != 2 {
		t.Errorf("status patches: %d, want 2 (launch; registration with initialization); writes %v", got, writes.summary(name))
	}
}

// summary lists the counted writes whose path names name, for failures.
func (w *writeCounter) summary(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for k, v := range w.count {
		if strings.Contains(k, name) {
			fmt.Fprintf(&b, "%s=%d ", k, v)
		}
	}
	return b.String()
}

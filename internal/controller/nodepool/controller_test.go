package nodepool

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/testcluster"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

// TestStatusShowsInKubectlColumns: the controller fills status.nodes,
// status.resources and Ready, so the printer columns `kubectl get
// nodepools -o wide` shows (NodeClass, Nodes, Ready, CPU, Memory) all have
// values; a pool whose class is missing is not Ready and says why.
func TestStatusShowsInKubectlColumns(t *testing.T) {
	ctx := context.Background()
	provider, err := kwok.New(cluster.Client, kwok.ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c := &Controller{Client: cluster.Client, Cloud: provider, Now: func() time.Time { return now }, looked: map[string]time.Time{}}
	if err := cluster.Client.Create(ctx, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ pool, class string }{{"good", "default"}, {"orphan", "missing"}} {
		np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: p.pool}, Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{
			Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: p.class},
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{}}}}}
		if err := cluster.Client.Create(ctx, np); err != nil {
			t.Fatal(err)
		}
	}
	for i, cpu := range []string{"4", "8"} {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "good-" + cpu, Labels: map[string]string{karpv1.NodePoolLabelKey: "good"}},
			Spec: karpv1.NodeClaimSpec{NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: "default"},
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{}}}
		if err := cluster.Client.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
		nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Gi")}
		if i == 0 {
			nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionTrue, Reason: "Registered", LastTransitionTime: metav1.Now()}}
		}
		if err := cluster.Client.Status().Update(ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	for _, pool := range []string{"good", "orphan"} {
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: pool}}); err != nil {
			t.Fatal(err)
		}
	}
	rows := table(t)
	want := map[string]map[string]string{
		"good":   {"NodeClass": "default", "Nodes": "2", "Ready": "True", "CPU": "12", "Memory": "32Gi"},
		"orphan": {"NodeClass": "missing", "Nodes": "0", "Ready": "False", "CPU": "0", "Memory": "0"},
	}
	for pool, cols := range want {
		for col, v := range cols {
			if got := rows[pool][col]; got != v {
				t.Errorf("kubectl column %s of NodePool %s = %q, want %q (row %v)", col, pool, got, v, rows[pool])
			}
		}
	}
	orphan := &karpv1.NodePool{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: "orphan"}, orphan); err != nil {
		t.Fatal(err)
	}
	t.Logf("orphan conditions: %+v", orphan.Status.Conditions)
}

// table asks the API server for NodePools as kubectl does (server-side
// printing) and returns each row's cells by column name.
func table(t *testing.T) map[string]map[string]string {
	t.Helper()
	cfg := rest.CopyConfig(cluster.Config)
	cfg.GroupVersion = &karpv1.SchemeGroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = clientNegotiator()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rc.Get().Resource("nodepools").SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var tab metav1.Table
	if err := json.Unmarshal(raw, &tab); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, row := range tab.Rows {
		cells := map[string]string{}
		for i, col := range tab.ColumnDefinitions {
			if i < len(row.Cells) {
				b, _ := json.Marshal(row.Cells[i])
				var s string
				if json.Unmarshal(b, &s) != nil {
					s = string(b)
				}
				cells[col.Name] = s
			}
		}
		out[cells["Name"]] = cells
	}
	return out
}

// countingClient is the test cluster's client, counting the NodeClaim
// lists a look at a NodePool makes.
type countingClient struct {
	client.Client
	lists int
}

func (c *countingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*karpv1.NodeClaimList); ok {
		c.lists++
	}
	return c.Client.List(ctx, list, opts...)
}

// TestLooksAtMostEveryInterval: events for a NodePool that come within
// MinInterval of the last look wait for the interval instead of reading
// every NodeClaim of the pool again; once it has passed, the next one looks.
func TestLooksAtMostEveryInterval(t *testing.T) {
	ctx := context.Background()
	provider, err := kwok.New(cluster.Client, kwok.ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "spaced"}, Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{
		Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{}}}}}
	if err := cluster.Client.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cc := &countingClient{Client: cluster.Client}
	c := &Controller{Client: cc, Cloud: provider, Now: func() time.Time { return now }, looked: map[string]time.Time{}}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Name: np.Name}}
	for _, step := range []struct {
		name      string
		advance   time.Duration
		lists     int
		requeueIn time.Duration // 0: the Resync after a look
	}{
		{"the first event looks", 0, 1, 0},
		{"an event at once waits", 0, 1, MinInterval},
		{"an event a second later waits the rest", time.Second, 1, MinInterval - time.Second},
		{"an event once the interval passed looks", time.Second, 2, 0},
	} {
		now = now.Add(step.advance)
		res, err := c.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if cc.lists != step.lists {
			t.Errorf("%s: %d NodeClaim lists in all, want %d", step.name, cc.lists, step.lists)
		}
		want := step.requeueIn
		if want == 0 {
			want = Resync
		}
		if res.RequeueAfter != want {
			t.Errorf("%s: requeued after %s, want %s", step.name, res.RequeueAfter, want)
		}
	}
}

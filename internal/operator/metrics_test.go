package operator

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/metrics"
)

// exercised are the metrics TestMetricsEndpoint's scenario must make appear:
// a NodePool with limits, pending pods, a NodeClaim launched, registered and
// initialized, pods on its node, then the NodeClaim deleted and terminated.
// The others (disruption decisions, interruption, balanced consolidation)
// need events this scenario does not cause; when they do appear, they are
// checked like the rest.
var exercised = []string{
	"karpenter_build_info",
	"karpenter_nodeclaims_created_total",
	"karpenter_nodeclaims_launched_total",
	"karpenter_nodeclaims_registered_total",
	"karpenter_nodeclaims_initialized_total",
	"karpenter_nodeclaims_terminated_total",
	"karpenter_nodeclaims_termination_duration_seconds",
	"karpenter_nodeclaims_instance_termination_duration_seconds",
	"karpenter_nodes_allocatable",
	"karpenter_nodes_system_overhead",
	"karpenter_nodes_total_pod_requests",
	"karpenter_nodes_total_pod_limits",
	"karpenter_nodes_total_daemon_requests",
	"karpenter_nodes_total_daemon_limits",
	"karpenter_nodes_current_lifetime_seconds",
	"karpenter_nodes_created_total",
	"karpenter_nodes_terminated_total",
	"karpenter_nodes_termination_duration_seconds",
	"karpenter_nodes_lifetime_duration_seconds",
	"karpenter_nodes_drained_total",
	"karpenter_pods_startup_duration_seconds",
	"karpenter_pods_bound_duration_seconds",
	"karpenter_pods_unbound_time_seconds",
	"karpenter_pods_unstarted_time_seconds",
	"karpenter_pods_drained_total",
	"karpenter_pods_eviction_requests_total",
	"nodewright_pods_state",
	"karpenter_nodepools_usage",
	"karpenter_nodepools_limit",
	"karpenter_nodepools_allowed_disruptions",
	"karpenter_voluntary_disruption_eligible_nodes",
	"karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
	"karpenter_scheduler_scheduling_duration_seconds",
	"karpenter_scheduler_queue_depth",
	"karpenter_scheduler_unschedulable_pods_count",
	"karpenter_cloudprovider_duration_seconds",
	"karpenter_cloudprovider_instance_type_cpu_cores",
	"karpenter_cloudprovider_instance_type_memory_bytes",
	"karpenter_cloudprovider_instance_type_offering_available",
	"karpenter_cloudprovider_instance_type_offering_price_estimate",
	"karpenter_cluster_state_node_count",
	"karpenter_cluster_state_synced",
	"karpenter_cluster_state_unsynced_time_seconds",
	"karpenter_cluster_utilization_percent",
	"karpenter_interruption_deleted_messages_total",
}

// TestMetricsEndpoint runs the controller, drives a NodeClaim through its
// life and scrapes /metrics over HTTP: every karpenter_ and nodewright_
// metric served must be in metrics.Specs with exactly its type and label
// names, every metric the scenario exercises must be there, and the values
// must follow the cluster (the NodePool's limit, the node's allocatable, no
// series left for the node once it is gone).
func TestMetricsEndpoint(t *testing.T) {
	const pool = "metrics"
	ctx := context.Background()
	setup(t, pool, func(np *karpv1.NodePool) {
		np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("1000")}
	})
	addr := freeAddr(t)
	stop := startController(t, func(o *Options) {
		o.MetricsAddr = addr
		// Evict at once rather than wait for room on a new node: no
		// kubelet here makes one Ready.
		o.Termination.RoomWait, o.Termination.Resync = 0, time.Second
	})
	defer stop()
	pendingPods(t, pool, 2, "100m")

	var claim karpv1.NodeClaim
	eventually(t, 30*time.Second, "a registered NodeClaim", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil || len(cs) == 0 {
			return false, err
		}
		claim = cs[0]
		return claim.Status.NodeName != "" && meta.IsStatusConditionTrue(claim.Status.Conditions, karpv1.ConditionTypeRegistered), nil
	})
	setNodeReady(t, claim.Status.NodeName)
	eventually(t, 20*time.Second, "the NodeClaim to be initialized", func() (bool, error) {
		nc := &karpv1.NodeClaim{}
		err := cluster.Client.Get(ctx, client.ObjectKey{Name: claim.Name}, nc)
		return err == nil && meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized), err
	})
	node := &corev1.Node{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: claim.Status.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	boundPod(t, pool, "metrics-daemon", node.Name, true)
	boundPod(t, pool, "metrics-app", node.Name, false)

	var families, before map[string]*dto.MetricFamily
	eventually(t, 20*time.Second, "the node's pod and daemon totals", func() (bool, error) {
		families = scrape(t, addr)
		_, ok := sample(families["karpenter_nodes_total_daemon_limits"], "node_name", node.Name, "resource_type", "cpu")
		return ok, fmt.Errorf("no daemon limits for %s", node.Name)
	})
	for _, c := range []struct {
		name  string
		want  float64
		where []string
	}{
		{"karpenter_nodepools_limit", 1000, []string{"nodepool", pool, "resource_type", "cpu"}},
		{"karpenter_nodepools_usage", 1, []string{"nodepool", pool, "resource_type", "nodes"}},
		{"karpenter_nodes_allocatable", float64(node.Status.Allocatable.Cpu().MilliValue()) / 1000, []string{"node_name", node.Name, "resource_type", "cpu", "nodepool", pool}},
		{"karpenter_nodes_total_daemon_requests", 0.1, []string{"node_name", node.Name, "resource_type", "cpu"}},
		{"karpenter_nodes_total_pod_requests", 0.2, []string{"node_name", node.Name, "resource_type", "cpu"}},
		{"karpenter_nodes_total_pod_limits", 0.4, []string{"node_name", node.Name, "resource_type", "cpu"}},
		{"karpenter_cluster_state_synced", 1, nil},
	} {
		got, ok := sample(families[c.name], c.where...)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.where, got, ok, c.want)
		}
	}

	before = families
	if err := cluster.Client.Delete(ctx, &claim); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the NodeClaim to terminate", func() (bool, error) {
		nc := &karpv1.NodeClaim{}
		err := cluster.Client.Get(ctx, client.ObjectKey{Name: claim.Name}, nc)
		if err == nil {
			err = fmt.Errorf("conditions %v", nc.Status.Conditions)
		}
		return apierrors.IsNotFound(err), err
	})
	eventually(t, 20*time.Second, "the node's series to go", func() (bool, error) {
		families = scrape(t, addr)
		_, ok := sample(families["karpenter_nodes_allocatable"], "node_name", node.Name)
		return !ok, fmt.Errorf("karpenter_nodes_allocatable still has node %s", node.Name)
	})
	if got, ok := sample(families["karpenter_nodeclaims_terminated_total"], "nodepool", pool); !ok || got < 1 {
		t.Errorf("karpenter_nodeclaims_terminated_total{nodepool=%q} = %v (found %v), want at least 1", pool, got, ok)
	}
	// The node's series were served before it went, the termination's after.
	checkFamilies(t, before, families)
}

// checkFamilies compares what the endpoint served in scrapes with
// metrics.Specs.
func checkFamilies(t *testing.T, scrapes ...map[string]*dto.MetricFamily) {
	t.Helper()
	specs := map[string]metrics.Spec{}
	for _, s := range metrics.Specs() {
		specs[s.Name] = s
	}
	served := map[string]bool{}
	for _, families := range scrapes {
		for name, f := range families {
			served[name] = served[name] || len(f.GetMetric()) > 0
			checkFamily(t, specs, name, f)
		}
	}
	var missing []string
	for _, name := range exercised {
		if _, ok := specs[name]; !ok {
			t.Errorf("%s is exercised but not declared", name)
		}
		if !served[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("not served in the scenario: %v", missing)
	}
	for name := range specs {
		if !served[name] && !slices.Contains(exercised, name) {
			t.Logf("not exercised by this scenario: %s", name)
		}
	}
}

// checkFamily compares one served metric with its Spec.
func checkFamily(t *testing.T, specs map[string]metrics.Spec, name string, f *dto.MetricFamily) {
	t.Helper()
	if !strings.HasPrefix(name, "karpenter_") && !strings.HasPrefix(name, "nodewright_") {
		return
	}
	s, ok := specs[name]
	if !ok {
		t.Errorf("%s is served but not in metrics.Specs (nor docs/metrics.md)", name)
		return
	}
	if got := metrics.Type(strings.ToLower(f.GetType().String())); got != s.Type {
		t.Errorf("%s: served as %s, declared %s", name, got, s.Type)
	}
	want := slices.Sorted(slices.Values(s.Labels))
	for _, m := range f.GetMetric() {
		var got []string
		for _, l := range m.GetLabel() {
			got = append(got, l.GetName())
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Errorf("%s: served with labels %v, declared (Karpenter's) %v", name, got, want)
			return
		}
	}
}

// boundPod creates a running pod on node with 100m CPU requested and 200m
// limit; daemon makes it a DaemonSet's. It ends at once when evicted.
func boundPod(t *testing.T, pool, name, node string, daemon bool) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"test-pool": pool}},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}}}},
	}
	if daemon {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: types.UID("ds-" + name), Controller: ptr.To(true)}}
	}
	if err := cluster.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	if err := cluster.Client.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// freeAddr is a loopback address with a port free now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// scrape reads the metrics endpoint at addr, retrying while it starts.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	var last error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			last = err
			continue
		}
		var p expfmt.TextParser
		families, err := p.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("parsing /metrics: %v", err)
		}
		return families
	}
	t.Fatalf("scraping http://%s/metrics: %v", addr, last)
	return nil
}

// sample is the value of the first series of f whose labels hold every
// name-value pair in where; gauges and counters only.
func sample(f *dto.MetricFamily, where ...string) (float64, bool) {
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(where); i += 2 {
			match = match && labels[where[i]] == where[i+1]
		}
		if !match {
			continue
		}
		switch {
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		}
		return 0, true
	}
	return 0, false
}

package metrics

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func pod(name, node string, phase corev1.PodPhase, requests, limits corev1.ResourceList, daemon bool, created time.Time) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(created)},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
	if daemon {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds"}}
	}
	return p
}

// value finds the sample of name whose labels contain every want pair,
// given as alternating label name and value.
func value(t *testing.T, samples []Sample, name string, want ...string) (float64, bool) {
	t.Helper()
	var labels []string
	for _, s := range stateSpecs {
		if s.Name == name {
			labels = s.Labels
		}
	}
	for _, s := range samples {
		if s.Name != name {
			continue
		}
		match := true
		for i := 0; i < len(want); i += 2 {
			idx := -1
			for j, l := range labels {
				if l == want[i] {
					idx = j
				}
			}
			if idx < 0 || s.Labels[idx] != want[i+1] {
				match = false
			}
		}
		if match {
			return s.Value, true
		}
	}
	return 0, false
}

func TestSamples(t *testing.T) {
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			Labels: map[string]string{karpv1.NodePoolLabelKey: "pool", corev1.LabelTopologyZone: "z1", corev1.LabelInstanceTypeStable: "m.large"}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://n1"},
		Status: corev1.NodeStatus{Capacity: rl("cpu", "4", "memory", "16Gi", "pods", "110"),
			Allocatable: rl("cpu", "3800m", "memory", "15Gi", "pods", "110")},
	}
	claims := []*karpv1.NodeClaim{
		{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{karpv1.NodePoolLabelKey: "pool"}},
			Status: karpv1.NodeClaimStatus{ProviderID: "kwok://n1", Capacity: rl("cpu", "2")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c2", Labels: map[string]string{karpv1.NodePoolLabelKey: "pool"}},
			Status: karpv1.NodeClaimStatus{ProviderID: "kwok://c2", Capacity: rl("cpu", "2", "memory", "8Gi")}},
	}
	pools := []*karpv1.NodePool{
		{ObjectMeta: metav1.ObjectMeta{Name: "pool"}, Spec: karpv1.NodePoolSpec{Limits: karpv1.Limits(rl("cpu", "100"))}},
		{ObjectMeta: metav1.ObjectMeta{Name: "empty"}},
	}
	pods := []*corev1.Pod{
		pod("web", "n1", corev1.PodRunning, rl("cpu", "500m", "memory", "1Gi"), rl("cpu", "1"), false, now.Add(-time.Hour)),
		pod("agent", "n1", corev1.PodRunning, rl("cpu", "100m"), rl("cpu", "200m"), true, now.Add(-time.Hour)),
		pod("done", "n1", corev1.PodSucceeded, rl("cpu", "8"), nil, false, now.Add(-time.Hour)),
		pod("waiting", "", corev1.PodPending, rl("cpu", "1"), nil, false, now.Add(-90*time.Second)),
		pod("pulling", "n1", corev1.PodPending, nil, nil, false, now.Add(-30*time.Second)),
	}
	samples := Samples(Snapshot{Nodes: []*corev1.Node{node}, Pods: pods, NodeClaims: claims, NodePools: pools, Synced: true, Now: now})

	for _, c := range []struct {
		name  string
		want  float64
		where []string
	}{
		{"karpenter_nodes_allocatable", 3.8, []string{"node_name", "n1", "resource_type", "cpu", "nodepool", "pool", "zone", "z1", "instance_type", "m.large"}},
		{"karpenter_nodes_system_overhead", 1024 * 1024 * 1024, []string{"resource_type", "memory"}},
		{"karpenter_nodes_total_pod_requests", 0.6, []string{"resource_type", "cpu"}}, // the finished pod does not count
		{"karpenter_nodes_total_pod_limits", 1.2, []string{"resource_type", "cpu"}},
		{"karpenter_nodes_total_daemon_requests", 0.1, []string{"resource_type", "cpu"}},
		{"karpenter_nodes_total_daemon_limits", 0.2, []string{"resource_type", "cpu"}},
		{"karpenter_nodes_current_lifetime_seconds", 3600, []string{"node_name", "n1"}},
		{"karpenter_cluster_utilization_percent", 100 * 0.6 / 3.8, []string{"resource_type", "cpu"}},
		{"karpenter_nodepools_usage", 6, []string{"nodepool", "pool", "resource_type", "cpu"}}, // the node's 4 and the unregistered claim's 2
		{"karpenter_nodepools_usage", 2, []string{"nodepool", "pool", "resource_type", "nodes"}},
		{"karpenter_nodepools_usage", 0, []string{"nodepool", "empty", "resource_type", "nodes"}},
		{"karpenter_nodepools_limit", 100, []string{"nodepool", "pool", "resource_type", "cpu"}},
		{"karpenter_cluster_state_node_count", 2, nil},
		{"karpenter_cluster_state_synced", 1, nil},
		{"karpenter_cluster_state_unsynced_time_seconds", 0, nil},
		{"karpenter_pods_unbound_time_seconds", 90, []string{"name", "waiting", "namespace", "default"}},
		{"karpenter_pods_unstarted_time_seconds", 30, []string{"name", "pulling"}},
	} {
		got, ok := value(t, samples, c.name, c.where...)
		if !ok {
			t.Errorf("%s%v: no sample", c.name, c.where)
			continue
		}
		if diff := got - c.want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%s%v = %v, want %v", c.name, c.where, got, c.want)
		}
	}
	for _, c := range []struct {
		name  string
		where []string
	}{
		{"karpenter_pods_unbound_time_seconds", []string{"name", "web"}},
		{"karpenter_pods_unbound_time_seconds", []string{"name", "done"}},
		{"karpenter_pods_unstarted_time_seconds", []string{"name", "web"}},
		{"karpenter_nodepools_limit", []string{"nodepool", "empty"}},
	} {
		if _, ok := value(t, samples, c.name, c.where...); ok {
			t.Errorf("%s%v: unexpected sample", c.name, c.where)
		}
	}
	for _, s := range samples {
		for _, spec := range stateSpecs {
			if spec.Name == s.Name && len(spec.Labels) != len(s.Labels) {
				t.Errorf("%s: %d label values for labels %s", s.Name, len(s.Labels), strings.Join(spec.Labels, ","))
			}
		}
	}
}

func TestSamplesOfAnUnsyncedCache(t *testing.T) {
	samples := Samples(Snapshot{UnsyncedFor: 5 * time.Second, Now: time.Now()})
	if v, _ := value(t, samples, "karpenter_cluster_state_synced"); v != 0 {
		t.Errorf("synced = %v, want 0", v)
	}
	if v, _ := value(t, samples, "karpenter_cluster_state_unsynced_time_seconds"); v != 5 {
		t.Errorf("unsynced time = %v, want 5", v)
	}
}

package metrics

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// nodeLabels are the node labels Karpenter copies onto its per-node metrics
// (its core well-known labels), under their metric label names.
var nodeLabels = []struct{ key, name string }{
	{karpv1.NodePoolLabelKey, labelNodePool},
	{corev1.LabelTopologyZone, labelZone},
	{corev1.LabelTopologyRegion, "region"},
	{corev1.LabelInstanceTypeStable, labelInstanceType},
	{corev1.LabelArchStable, "arch"},
	{corev1.LabelOSStable, "os"},
	{karpv1.CapacityTypeLabelKey, labelCapacityType},
	{corev1.LabelWindowsBuild, "windows_build"},
}

// nodeLabelNames are the label names of the per-node metrics; resource
// gauges add resource_type.
func nodeLabelNames(withResource bool) []string {
	names := []string{"node_name"}
	for _, l := range nodeLabels {
		names = append(names, l.name)
	}
	names = append(names, "phase")
	if withResource {
		names = append(names, labelResourceType)
	}
	return names
}

// resourceNodes is the pseudo-resource NodePool usage counts nodes under.
const resourceNodes corev1.ResourceName = "nodes"

// stateSpecs are the metrics the Collector computes at each scrape.
var stateSpecs []Spec

// stateMetric declares a gauge the Collector computes and returns its name.
func stateMetric(s Spec) string {
	s.Type = Gauge
	stateSpecs = append(stateSpecs, declare(s))
	return s.Name
}

// State-derived metrics, computed by the Collector at each scrape.
var (
	nodeAllocatable = stateMetric(Spec{Name: "karpenter_nodes_allocatable",
		Help: "Resources allocatable by nodes.", Labels: nodeLabelNames(true)})
	nodePodRequests = stateMetric(Spec{Name: "karpenter_nodes_total_pod_requests",
		Help: "Resources requested by the pods bound to nodes, DaemonSet pods included.", Labels: nodeLabelNames(true)})
	nodePodLimits = stateMetric(Spec{Name: "karpenter_nodes_total_pod_limits",
		Help: "Resource limits of the pods bound to nodes, DaemonSet pods included.", Labels: nodeLabelNames(true)})
	nodeDaemonRequests = stateMetric(Spec{Name: "karpenter_nodes_total_daemon_requests",
		Help: "Resources requested by the DaemonSet pods bound to nodes.", Labels: nodeLabelNames(true)})
	nodeDaemonLimits = stateMetric(Spec{Name: "karpenter_nodes_total_daemon_limits",
		Help: "Resource limits of the DaemonSet pods bound to nodes.", Labels: nodeLabelNames(true)})
	nodeOverhead = stateMetric(Spec{Name: "karpenter_nodes_system_overhead",
		Help: "Resources reserved for the system: a node's capacity less its allocatable.", Labels: nodeLabelNames(true)})
	nodeLifetime = stateMetric(Spec{Name: "karpenter_nodes_current_lifetime_seconds",
		Help: "Node age in seconds.", Labels: nodeLabelNames(false)})
	clusterUtilization = stateMetric(Spec{Name: "karpenter_cluster_utilization_percent",
		Help: "Utilization of allocatable resources by pod requests, over all nodes, in percent.", Labels: []string{labelResourceType}})
	poolUsage = stateMetric(Spec{Name: "karpenter_nodepools_usage",
		Help:   "Resources provisioned for a NodePool (capacity of its nodes, and their count as \"nodes\"), by resource type.",
		Labels: []string{labelResourceType, labelNodePool}})
	poolLimit = stateMetric(Spec{Name: "karpenter_nodepools_limit",
		Help: "Limits set on a NodePool, by resource type.", Labels: []string{labelResourceType, labelNodePool}})
	stateNodeCount = stateMetric(Spec{Name: "karpenter_cluster_state_node_count",
		Help: "Number of nodes the controller knows: the cluster's nodes and launched NodeClaims not yet registered."})
	stateSynced = stateMetric(Spec{Name: "karpenter_cluster_state_synced",
		Help: "1 when the controller's caches of nodes, NodeClaims, NodePools and pods are synced with the API server, else 0."})
	stateUnsynced = stateMetric(Spec{Name: "karpenter_cluster_state_unsynced_time_seconds",
		Help: "How long the caches have been out of sync, in seconds; 0 when synced."})
	podUnbound = stateMetric(Spec{Name: "karpenter_pods_unbound_time_seconds",
		Help: "Time since creation of a pod not yet bound to a node, in seconds.", Labels: []string{"name", "namespace"}})
	podUnstarted = stateMetric(Spec{Name: "karpenter_pods_unstarted_time_seconds",
		Help: "Time since creation of a pod still Pending, in seconds.", Labels: []string{"name", "namespace"}})
)

// Snapshot is what the cache held at a scrape: the cache's own objects,
// read and never changed.
type Snapshot struct {
	Nodes      []*corev1.Node
	Pods       []*corev1.Pod
	NodeClaims []*karpv1.NodeClaim
	NodePools  []*karpv1.NodePool
	// Synced: the caches have synced; UnsyncedFor: for how long they have
	// not been.
	Synced      bool
	UnsyncedFor time.Duration
	Now         time.Time
}

// Sample is one value of one metric, named by the metric's full name.
type Sample struct {
	Name   string
	Labels []string
	Value  float64
}

// Samples computes every state-derived metric from s.
func Samples(s Snapshot) []Sample {
	var out []Sample
	add := func(name string, v float64, labels ...string) {
		out = append(out, Sample{Name: name, Labels: labels, Value: v})
	}
	requests, limits, dsRequests, dsLimits := podTotals(s.Pods)
	allocatable, requested := corev1.ResourceList{}, corev1.ResourceList{}
	for _, n := range s.Nodes {
		labels := nodeLabelValues(n)
		for _, g := range []struct {
			name string
			rl   corev1.ResourceList
		}{
			{nodeAllocatable, n.Status.Allocatable},
			{nodeOverhead, subtract(n.Status.Capacity, n.Status.Allocatable)},
			{nodePodRequests, requests[n.Name]},
			{nodePodLimits, limits[n.Name]},
			{nodeDaemonRequests, dsRequests[n.Name]},
			{nodeDaemonLimits, dsLimits[n.Name]},
		} {
			for name, q := range g.rl {
				add(g.name, quantity(name, q), append(slices.Clip(labels), resourceName(name))...)
			}
		}
		add(nodeLifetime, s.Now.Sub(n.CreationTimestamp.Time).Seconds(), labels...)
		merge(allocatable, n.Status.Allocatable)
		merge(requested, requests[n.Name])
	}
	for name, a := range allocatable {
		if a.IsZero() {
			continue
		}
		r := requested[name]
		add(clusterUtilization, 100*quantity(name, r)/quantity(name, a), resourceName(name))
	}
	for pool, rl := range usageByPool(s.NodePools, s.NodeClaims, s.Nodes) {
		for name, q := range rl {
			add(poolUsage, quantity(name, q), resourceName(name), pool)
		}
	}
	for _, np := range s.NodePools {
		for name, q := range np.Spec.Limits {
			add(poolLimit, quantity(name, q), resourceName(name), np.Name)
		}
	}
	add(stateNodeCount, float64(stateNodes(s.Nodes, s.NodeClaims)))
	synced, unsynced := 0.0, s.UnsyncedFor.Seconds()
	if s.Synced {
		synced, unsynced = 1, 0
	}
	add(stateSynced, synced)
	add(stateUnsynced, unsynced)
	for _, p := range s.Pods {
		if terminal(p) {
			continue
		}
		age := s.Now.Sub(p.CreationTimestamp.Time).Seconds()
		if !bound(p) {
			add(podUnbound, age, p.Name, p.Namespace)
		}
		if p.Status.Phase == corev1.PodPending {
			add(podUnstarted, age, p.Name, p.Namespace)
		}
	}
	return out
}

// podTotals sums the requests and limits of the live pods bound to each
// node, all of them and the DaemonSet ones alone.
func podTotals(pods []*corev1.Pod) (requests, limits, dsRequests, dsLimits map[string]corev1.ResourceList) {
	requests, limits = map[string]corev1.ResourceList{}, map[string]corev1.ResourceList{}
	dsRequests, dsLimits = map[string]corev1.ResourceList{}, map[string]corev1.ResourceList{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || terminal(p) {
			continue
		}
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		lim := resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{})
		add := func(m map[string]corev1.ResourceList, rl corev1.ResourceList) {
			if m[p.Spec.NodeName] == nil {
				m[p.Spec.NodeName] = corev1.ResourceList{}
			}
			merge(m[p.Spec.NodeName], rl)
		}
		add(requests, req)
		add(limits, lim)
		if daemon(p) {
			add(dsRequests, req)
			add(dsLimits, lim)
		}
	}
	return requests, limits, dsRequests, dsLimits
}

// usageByPool sums, per NodePool, the capacity of its NodeClaims (their
// node's when registered) and counts them as "nodes", as Karpenter's
// NodePool status.resources does.
func usageByPool(pools []*karpv1.NodePool, claims []*karpv1.NodeClaim, nodes []*corev1.Node) map[string]corev1.ResourceList {
	byProvider := map[string]*corev1.Node{}
	for _, n := range nodes {
		if id := n.Spec.ProviderID; id != "" {
			byProvider[id] = n
		}
	}
	usage := map[string]corev1.ResourceList{}
	for _, np := range pools {
		usage[np.Name] = corev1.ResourceList{}
	}
	for _, nc := range claims {
		rl, ok := usage[nc.Labels[karpv1.NodePoolLabelKey]]
		if !ok {
			continue
		}
		capacity := nc.Status.Capacity
		if n := byProvider[nc.Status.ProviderID]; n != nil && nc.Status.ProviderID != "" {
			capacity = n.Status.Capacity
		}
		merge(rl, capacity)
		count := rl[resourceNodes]
		count.Add(*resource.NewQuantity(1, resource.DecimalSI))
		rl[resourceNodes] = count
	}
	for pool, rl := range usage {
		if _, ok := rl[resourceNodes]; !ok {
			rl[resourceNodes] = *resource.NewQuantity(0, resource.DecimalSI)
		}
		usage[pool] = rl
	}
	return usage
}

// stateNodes counts the nodes and the launched NodeClaims whose node has
// not registered, each machine once.
func stateNodes(nodes []*corev1.Node, claims []*karpv1.NodeClaim) int {
	seen := map[string]bool{}
	for _, n := range nodes {
		key := n.Spec.ProviderID
		if key == "" {
			key = "node/" + n.Name
		}
		seen[key] = true
	}
	for _, nc := range claims {
		if id := nc.Status.ProviderID; id != "" {
			seen[id] = true
		}
	}
	return len(seen)
}

func nodeLabelValues(n *corev1.Node) []string {
	out := []string{n.Name}
	for _, l := range nodeLabels {
		out = append(out, n.Labels[l.key])
	}
	return append(out, string(n.Status.Phase))
}

// resourceName is a resource's name as a label value: "ephemeral-storage"
// becomes "ephemeral_storage".
func resourceName(name corev1.ResourceName) string {
	return strings.ReplaceAll(strings.ToLower(string(name)), "-", "_")
}

// quantity is a resource's value in its base unit: CPU in cores, the rest
// as integers (bytes, counts).
func quantity(name corev1.ResourceName, q resource.Quantity) float64 {
	if name == corev1.ResourceCPU {
		return float64(q.MilliValue()) / 1000
	}
	return float64(q.Value())
}

func merge(into, add corev1.ResourceList) {
	for name, q := range add {
		sum := into[name]
		sum.Add(q)
		into[name] = sum
	}
}

// subtract is a less b, for the resources a has.
func subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range a {
		d := q.DeepCopy()
		if s, ok := b[name]; ok {
			d.Sub(s)
		}
		out[name] = d
	}
	return out
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func bound(p *corev1.Pod) bool {
	c := condition(p, corev1.PodScheduled)
	return p.Spec.NodeName != "" || c != nil && c.Status == corev1.ConditionTrue
}

func daemon(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

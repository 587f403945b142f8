package kubescheduler

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Options say what kube-scheduler would know beyond nodes and pods.
type Options struct {
	// DefaultSpreadSelector selects the pods of the Services, ReplicaSets,
	// StatefulSets and ReplicationControllers that own or select p: the
	// selector of kube-scheduler's default topology spread constraints for
	// a pod that sets none. Nil, or a nil or empty selector, means none.
	DefaultSpreadSelector func(p *corev1.Pod) labels.Selector
	// Namespaces give the labels that affinity terms' namespaceSelectors
	// match.
	Namespaces []*corev1.Namespace
	// PVCs, PVs and StorageClasses are what pods' volumes refer to, for
	// the VolumeBinding and VolumeZone filters.
	PVCs           []*corev1.PersistentVolumeClaim
	PVs            []*corev1.PersistentVolume
	StorageClasses []*storagev1.StorageClass
	// Cache, when set, keeps what is derived from each pod between
	// snapshots.
	Cache *Cache
}

// Snapshot is the cluster as kube-scheduler's cache holds it during a
// scheduling pass: the nodes, the pods bound to them and what is derived
// from them. Schedule reads it; Assume adds a binding.
type Snapshot struct {
	opts     Options
	nodes    []*nodeInfo // by name
	byName   map[string]int
	nsLabels map[string]labels.Set
	vols     volumes
	// withAffinity are the bound pods with pod affinity or anti-affinity
	// terms, which every decision must consult (kube-scheduler's
	// HavePodsWithAffinityList).
	withAffinity []*podInfo
	// counts memoizes, per pod matcher, how many bound pods on each node
	// it matches, so that spread and affinity need not walk every pod for
	// every decision; Assume keeps them current.
	counts map[string]*nodeCounts
	// domains memoizes, per topology key, each node's domain.
	domains map[string]*domainIndex
}

// domainIndex numbers a topology key's values: byNode[i] is node i's
// domain, or missing (len(values)) when the node lacks the key.
type domainIndex struct {
	byNode  []int
	values  []string
	missing int
}

// domainsOf is the domain index of a topology key.
func (s *Snapshot) domainsOf(key string) *domainIndex {
	if d, ok := s.domains[key]; ok {
		return d
	}
	d := &domainIndex{byNode: make([]int, len(s.nodes))}
	seen := map[string]int{}
	var missing []int
	for i, n := range s.nodes {
		v, ok := n.node.Labels[key]
		if !ok {
			missing = append(missing, i)
			continue
		}
		id, ok := seen[v]
		if !ok {
			id = len(d.values)
			seen[v] = id
			d.values = append(d.values, v)
		}
		d.byNode[i] = id
	}
	d.missing = len(d.values)
	for _, i := range missing {
		d.byNode[i] = d.missing
	}
	s.domains[key] = d
	return d
}

type nodeInfo struct {
	node *corev1.Node
	pods []*podInfo
	// alloc and req are allocatable and the sum of the pods' requests;
	// nonZero is that sum with kube-scheduler's defaults for requests a
	// container leaves out, which LeastAllocated scores.
	alloc, req resources
	nonZero    cpuMem
	maxPods    int64
	ports      []hostPort
}

type nodeCounts struct {
	m      *matcher
	byNode []int
}

// NewSnapshot indexes nodes and the pods bound to them. Pods not bound to
// one of nodes, and finished pods, are left out.
func NewSnapshot(nodes []*corev1.Node, pods []*corev1.Pod, opts Options) *Snapshot {
	s := &Snapshot{opts: opts, byName: make(map[string]int, len(nodes)), nsLabels: map[string]labels.Set{},
		counts: map[string]*nodeCounts{}, domains: map[string]*domainIndex{}, vols: newVolumes(opts)}
	sorted := append([]*corev1.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for i, n := range sorted {
		s.byName[n.Name] = i
		s.nodes = append(s.nodes, &nodeInfo{node: n, alloc: allocatable(n.Status.Allocatable),
			maxPods: n.Status.Allocatable.Pods().Value()})
	}
	for _, ns := range opts.Namespaces {
		s.nsLabels[ns.Name] = labels.Set(ns.Labels)
	}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if i, ok := s.byName[p.Spec.NodeName]; ok {
			s.add(opts.Cache.info(p), i)
		}
	}
	return s
}

// Assume records that pod is bound to node, as kube-scheduler's cache
// does before the binding reaches the API server, so that the next
// decision sees it. A node not in the snapshot is ignored.
func (s *Snapshot) Assume(pod *corev1.Pod, node string) {
	if i, ok := s.byName[node]; ok {
		s.add(s.opts.Cache.info(pod), i)
	}
}

func (s *Snapshot) add(pi *podInfo, i int) {
	n := s.nodes[i]
	pi.node = i
	n.pods = append(n.pods, pi)
	n.req.add(pi.req)
	n.nonZero.cpu += pi.nonZero.cpu
	n.nonZero.mem += pi.nonZero.mem
	n.ports = append(n.ports, pi.ports...)
	if pi.hasAffinity() {
		s.withAffinity = append(s.withAffinity, pi)
	}
	for _, c := range s.counts {
		if c.m.matches(pi, s.nsLabels) {
			c.byNode[i]++
		}
	}
}

// countsFor is how many bound pods m matches on each node.
func (s *Snapshot) countsFor(m *matcher) []int {
	if c, ok := s.counts[m.key]; ok {
		return c.byNode
	}
	c := &nodeCounts{m: m, byNode: make([]int, len(s.nodes))}
	for i, n := range s.nodes {
		for _, p := range n.pods {
			if m.matches(p, s.nsLabels) {
				c.byNode[i]++
			}
		}
	}
	s.counts[m.key] = c
	return c.byNode
}

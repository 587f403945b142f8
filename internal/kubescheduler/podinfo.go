package kubescheduler

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Kube-scheduler's requests for a container that sets none, used by
// LeastAllocated scoring only (the scheduler's DefaultMilliCPURequest and
// DefaultMemoryRequest), so that pods without requests still spread.
var nonZeroDefaults = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("100m"),
	corev1.ResourceMemory: resource.MustParse("200Mi"),
}

// podInfo is what decisions need of a pod, computed once.
type podInfo struct {
	pod     *corev1.Pod
	labels  labels.Set
	node    int // index in the snapshot once bound
	req     resources
	nonZero cpuMem
	ports   []hostPort
	// Pod affinity terms, with namespaces defaulted as the API does.
	reqAffinity, reqAnti   []affinityTerm
	prefAffinity, prefAnti []weightedTerm
}

func (p *podInfo) hasAffinity() bool {
	return len(p.reqAffinity)+len(p.reqAnti)+len(p.prefAffinity)+len(p.prefAnti) > 0
}

// Cache keeps pods' podInfo from one Snapshot to the next. It is valid
// while the pods' specs and labels do not change, as in the simulator.
type Cache struct{ pods map[types.UID]*podInfo }

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{pods: map[types.UID]*podInfo{}} }

// Forget drops a pod that is gone.
func (c *Cache) Forget(uid types.UID) {
	if c != nil {
		delete(c.pods, uid)
	}
}

func (c *Cache) info(p *corev1.Pod) *podInfo {
	if c == nil || p.UID == "" {
		return newPodInfo(p)
	}
	if pi, ok := c.pods[p.UID]; ok && pi.pod == p {
		return pi
	}
	pi := newPodInfo(p)
	c.pods[p.UID] = pi
	return pi
}

func newPodInfo(p *corev1.Pod) *podInfo {
	pi := &podInfo{pod: p, labels: labels.Set(p.Labels),
		req: requestsOf(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))}
	nz := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{NonMissingContainerRequests: nonZeroDefaults})
	pi.nonZero = cpuMem{cpu: nz.Cpu().MilliValue(), mem: nz.Memory().Value()}
	pi.ports = podPorts(p)
	if a := p.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			pi.reqAffinity = affinityTerms(p, pa.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.prefAffinity = weightedTerms(p, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			pi.reqAnti = affinityTerms(p, pa.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.prefAnti = weightedTerms(p, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	return pi
}

// affinityTerm is a pod (anti-)affinity term: the pods it matches and the
// topology key whose domains it speaks of.
type affinityTerm struct {
	m           *matcher
	topologyKey string
}

type weightedTerm struct {
	affinityTerm
	weight int64
}

func affinityTerms(p *corev1.Pod, terms []corev1.PodAffinityTerm) []affinityTerm {
	var out []affinityTerm
	for i := range terms {
		t := &terms[i]
		out = append(out, affinityTerm{m: termMatcher(p, t), topologyKey: t.TopologyKey})
	}
	return out
}

func weightedTerms(p *corev1.Pod, terms []corev1.WeightedPodAffinityTerm) []weightedTerm {
	var out []weightedTerm
	for i := range terms {
		t := &terms[i].PodAffinityTerm
		if terms[i].Weight == 0 {
			continue
		}
		out = append(out, weightedTerm{affinityTerm{m: termMatcher(p, t), topologyKey: t.TopologyKey}, int64(terms[i].Weight)})
	}
	return out
}

// termMatcher is the pods a term selects: in the term's namespaces, or the
// pod's own when it names none, with matchLabelKeys and mismatchLabelKeys
// merged into the selector as kube-apiserver does.
func termMatcher(p *corev1.Pod, t *corev1.PodAffinityTerm) *matcher {
	c := clause{namespaces: map[string]bool{}}
	for _, ns := range t.Namespaces {
		c.namespaces[ns] = true
	}
	if len(t.Namespaces) == 0 && t.NamespaceSelector == nil {
		c.namespaces[p.Namespace] = true
	}
	c.nsSel, c.nsKey = selectorOf(t.NamespaceSelector, nil, nil, nil)
	c.sel, c.selKey = selectorOf(t.LabelSelector, p.Labels, t.MatchLabelKeys, t.MismatchLabelKeys)
	return newMatcher(c)
}

// selectorOf converts a label selector; nil selects nothing. Its key tells
// selectors apart for memoization (labels.Nothing prints as "", as
// labels.Everything does).
func selectorOf(ls *metav1.LabelSelector, podLabels map[string]string, match, mismatch []string) (labels.Selector, string) {
	if ls == nil {
		return labels.Nothing(), "<none>"
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing(), "<none>"
	}
	add := func(keys []string, op selection.Operator) {
		for _, k := range keys {
			if v, ok := podLabels[k]; ok {
				if r, err := labels.NewRequirement(k, op, []string{v}); err == nil {
					sel = sel.Add(*r)
				}
			}
		}
	}
	add(match, selection.In)
	add(mismatch, selection.NotIn)
	return sel, "sel:" + sel.String()
}

// matcher selects pods by clauses that must all match.
type matcher struct {
	key     string
	clauses []clause
}

type clause struct {
	namespaces    map[string]bool
	nsSel, sel    labels.Selector
	nsKey, selKey string
}

func newMatcher(cs ...clause) *matcher {
	m := &matcher{clauses: cs}
	var b strings.Builder
	for _, c := range cs {
		ns := make([]string, 0, len(c.namespaces))
		for n := range c.namespaces {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		b.WriteString(strings.Join(ns, ","))
		b.WriteString("|" + c.nsKey + "|" + c.selKey + ";")
	}
	m.key = b.String()
	return m
}

func (m *matcher) matches(p *podInfo, nsLabels map[string]labels.Set) bool {
	for i := range m.clauses {
		if !m.clauses[i].matches(p, nsLabels) {
			return false
		}
	}
	return true
}

func (c *clause) matches(p *podInfo, nsLabels map[string]labels.Set) bool {
	if !c.namespaces[p.pod.Namespace] && !c.nsSel.Matches(nsLabels[p.pod.Namespace]) {
		return false
	}
	return c.sel.Matches(p.labels)
}

// resources are amounts in the scheduler's units: millicores and bytes.
type resources struct {
	cpu, mem, eph int64
	scalar        map[corev1.ResourceName]int64
}

type cpuMem struct{ cpu, mem int64 }

func requestsOf(rl corev1.ResourceList) resources {
	var r resources
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.cpu = q.MilliValue()
		case corev1.ResourceMemory:
			r.mem = q.Value()
		case corev1.ResourceEphemeralStorage:
			r.eph = q.Value()
		case corev1.ResourcePods:
		default:
			if q.IsZero() {
				continue
			}
			if r.scalar == nil {
				r.scalar = map[corev1.ResourceName]int64{}
			}
			r.scalar[name] = q.Value()
		}
	}
	return r
}

func allocatable(rl corev1.ResourceList) resources { return requestsOf(rl) }

func (r *resources) add(o resources) {
	r.cpu += o.cpu
	r.mem += o.mem
	r.eph += o.eph
	for k, v := range o.scalar {
		if r.scalar == nil {
			r.scalar = map[corev1.ResourceName]int64{}
		}
		r.scalar[k] += v
	}
}

// hostPort is a port a pod takes on its node.
type hostPort struct {
	ip    string
	proto corev1.Protocol
	port  int32
}

// conflicts is the NodePorts rule: the same port and protocol, on the
// same address or on the wildcard one.
func (a hostPort) conflicts(b hostPort) bool {
	return a.port == b.port && a.proto == b.proto && (a.ip == b.ip || a.ip == "0.0.0.0" || b.ip == "0.0.0.0")
}

func podPorts(p *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(cs []corev1.Container, sidecarsOnly bool) {
		for i := range cs {
			c := &cs[i]
			if sidecarsOnly && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
				continue
			}
			for _, cp := range c.Ports {
				if cp.HostPort <= 0 {
					continue
				}
				hp := hostPort{ip: cp.HostIP, proto: cp.Protocol, port: cp.HostPort}
				if hp.ip == "" {
					hp.ip = "0.0.0.0"
				}
				if hp.proto == "" {
					hp.proto = corev1.ProtocolTCP
				}
				out = append(out, hp)
			}
		}
	}
	add(p.Spec.InitContainers, true)
	add(p.Spec.Containers, false)
	return out
}

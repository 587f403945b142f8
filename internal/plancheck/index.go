package plancheck

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
)

// boundPod is a pod bound to a node during the replay (existing pods and
// DaemonSet pods from the start, planned pods as their turn comes).
type boundPod struct {
	pod    *corev1.Pod
	node   *node
	labels labels.Set
}

// ownedTerm is a required anti-affinity term of a bound pod, filed under the
// domain of its node: it keeps matching pods out of that domain.
type ownedTerm struct {
	owner *boundPod
	term  affinityTerm
}

// podIndex finds bound pods by topology domain, so that each check looks at
// the pods of one domain rather than at every pod of the cluster.
type podIndex struct {
	ck  *checker
	all []*boundPod
	// byDomain[key][value] lists the pods on nodes whose label key is value.
	// A key is indexed the first time someone asks for it.
	byDomain map[string]map[string][]*boundPod
	// antiByDomain[key][value] lists the required anti-affinity terms with
	// topology key key of the pods on nodes whose label key is value.
	antiByDomain map[string]map[string][]ownedTerm
	// counters count, per node, the pods a spread selector matches.
	counters map[string]*spreadCounter
	// tables number the domains of each topology key over the node set.
	tables map[string]*domainTable
}

func newPodIndex(ck *checker) *podIndex {
	return &podIndex{
		ck:           ck,
		byDomain:     map[string]map[string][]*boundPod{},
		antiByDomain: map[string]map[string][]ownedTerm{},
		counters:     map[string]*spreadCounter{},
		tables:       map[string]*domainTable{},
	}
}

// domain returns the bound pods on nodes whose label key has value.
func (ix *podIndex) domain(key, value string) []*boundPod {
	byValue, ok := ix.byDomain[key]
	if !ok {
		byValue = map[string][]*boundPod{}
		for _, bp := range ix.all {
			if v, ok := bp.node.labels()[key]; ok {
				byValue[v] = append(byValue[v], bp)
			}
		}
		ix.byDomain[key] = byValue
	}
	return byValue[value]
}

// bind puts p on n: its requests, host ports and labels count from now on
// (host ports are read off n.pods).
func (ck *checker) bind(p *corev1.Pod, n *node) {
	bp := &boundPod{pod: p, node: n, labels: labels.Set(p.Labels)}
	for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
		n.used[name] += amount(name, q)
	}
	n.pods = append(n.pods, bp)

	ix := ck.index
	ix.all = append(ix.all, bp)
	nodeLabels := n.labels()
	for key, byValue := range ix.byDomain {
		if v, ok := nodeLabels[key]; ok {
			byValue[v] = append(byValue[v], bp)
		}
	}
	// Terms that do not parse constrain nothing here: the pod is already
	// bound, and kube-scheduler skips such terms of existing pods too.
	terms, _ := ck.requiredTerms(p, antiAffinityTerms)
	for _, t := range terms {
		v, ok := nodeLabels[t.key]
		if !ok {
			continue
		}
		byValue := ix.antiByDomain[t.key]
		if byValue == nil {
			byValue = map[string][]ownedTerm{}
			ix.antiByDomain[t.key] = byValue
		}
		byValue[v] = append(byValue[v], ownedTerm{owner: bp, term: t})
	}
	for _, c := range ix.counters {
		c.add(bp)
	}
}

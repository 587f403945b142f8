package plancheck

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/solver"
)

// node is a node of the final node set as kube-scheduler would see it.
type node struct {
	idx  int
	name string
	// obj carries labels, taints and allocatable in the form the
	// component-helpers matchers take.
	obj *corev1.Node
	// claim is the index in plan.NewClaims, -1 for an existing node.
	claim    int
	deleting bool
	// daemonsBound: a new node's DaemonSet pods are bound (it came up).
	daemonsBound bool
	// launchType is the instance type the provider would launch for a claim;
	// nil for existing nodes and for claims no type of which can launch.
	launchType *instancetype.InstanceType
	// used sums the requests of the pods bound so far (CPU in millicores, the
	// rest in base units, as kube-scheduler's NodeResourcesFit counts them).
	used map[corev1.ResourceName]int64
	pods []*boundPod
}

func (n *node) labels() map[string]string { return n.obj.Labels }

// ephemeralTaints are set by Kubernetes while a node starts; an in-flight
// node loses them once it is ready, so they do not count against its pods.
var ephemeralTaints = map[string]bool{
	corev1.TaintNodeNotReady:                         true,
	corev1.TaintNodeUnreachable:                      true,
	"node.cloudprovider.kubernetes.io/uninitialized": true,
	"karpenter.sh/unregistered":                      true,
}

// buildNodes materializes every node the plan ends with and binds the pods
// already on them: existing pods, and on new nodes their DaemonSet pods.
func (ck *checker) buildNodes() {
	for i := range ck.in.Nodes {
		ck.addExisting(&ck.in.Nodes[i])
	}
	ck.claims = make([]*node, len(ck.plan.NewClaims))
	for i, c := range ck.plan.NewClaims {
		if c == nil {
			ck.report(nil, "", "plan", fmt.Sprintf("NewClaims[%d] is nil", i))
			continue
		}
		ck.claims[i] = ck.addClaim(i, c)
	}
}

func (ck *checker) addNode(n *node) {
	n.idx = len(ck.nodes)
	n.used = map[corev1.ResourceName]int64{}
	ck.nodes = append(ck.nodes, n)
	if _, dup := ck.byName[n.name]; dup {
		ck.report(nil, n.name, "plan", fmt.Sprintf("two nodes are named %q (a claim's hostname must be unique, or hostname topology merges them)", n.name))
		return
	}
	ck.byName[n.name] = n
}

func (ck *checker) addExisting(in *solver.Node) {
	labels := maps.Clone(in.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if _, ok := labels[corev1.LabelHostname]; !ok {
		labels[corev1.LabelHostname] = in.Name
	}
	var taints []corev1.Taint
	for _, t := range in.Taints {
		if in.InFlight && (ephemeralTaints[t.Key] || isStartupTaint(in.StartupTaints, &t)) {
			continue
		}
		taints = append(taints, t)
	}
	n := &node{
		name:     in.Name,
		obj:      nodeObject(in.Name, labels, taints, in.Allocatable),
		claim:    -1,
		deleting: in.Deleting,
	}
	ck.addNode(n)
	for _, p := range in.Pods {
		if p != nil {
			ck.bind(p, n)
		}
	}
}

func isStartupTaint(startup []corev1.Taint, t *corev1.Taint) bool {
	for i := range startup {
		if startup[i].MatchTaint(t) {
			return true
		}
	}
	return false
}

// addClaim launches a claim the way the provider would: the first of its
// instance types with an offering its requirements allow, in that type's
// cheapest allowed offering.
func (ck *checker) addClaim(i int, c *solver.NewClaim) *node {
	name := c.Hostname
	if name == "" {
		name = fmt.Sprintf("new-claim-%d", i)
		ck.report(nil, name, "plan", fmt.Sprintf("NewClaims[%d] has no hostname", i))
	}
	labels := c.Requirements.Labels()
	var alloc corev1.ResourceList
	var chosen *instancetype.InstanceType
	for _, it := range c.InstanceTypes {
		o, ok := it.Offerings.Cheapest(c.Requirements)
		if !ok {
			continue
		}
		chosen = it
		for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelArchStable, corev1.LabelOSStable} {
			if v, ok := singleValue(it, key); ok {
				labels[key] = v
			}
		}
		labels[corev1.LabelTopologyZone] = o.Zone
		labels[instancetype.CapacityTypeLabel] = o.CapacityType
		alloc = ck.allocatable(it)
		break
	}
	if chosen == nil {
		ck.report(nil, name, "plan", fmt.Sprintf("NewClaims[%d]: none of its %d instance types has an available offering its requirements (%s) allow; the provider cannot launch it", i, len(c.InstanceTypes), c.Requirements))
	}
	labels["karpenter.sh/nodepool"] = c.NodePool
	var taints []corev1.Taint
	if pool := ck.pools[c.NodePool]; pool != nil {
		maps.Copy(labels, pool.Labels)
		// Startup taints go once the node is initialized; pods bind after.
		taints = pool.Taints
	}
	labels[corev1.LabelHostname] = name
	n := &node{name: name, obj: nodeObject(name, labels, taints, alloc), claim: i, launchType: chosen}
	ck.addNode(n)
	return n
}

// singleValue is the instance type's value for a well-known label, when its
// requirements pin exactly one.
func singleValue(it *instancetype.InstanceType, key string) (string, bool) {
	r, ok := it.Requirements[key]
	if !ok || r.Complement() {
		return "", false
	}
	if vs := r.Values(); len(vs) == 1 {
		return vs[0], true
	}
	return "", false
}

// addDaemonPods binds to a new node the pod of every DaemonSet the
// DaemonSet controller would run there: it tolerates the node's NoSchedule
// and NoExecute taints and its required node affinity matches. The replay
// calls it when the node comes up, just before the first planned pod binds
// there: pods planned onto existing nodes before that bind first, as they
// would in a cluster. kube-scheduler places DaemonSet pods too, so the
// required anti-affinity of pods already bound must let them in. (Existing
// nodes list their DaemonSet pods in Node.Pods already.)
func (ck *checker) addDaemonPods(n *node) {
	n.daemonsBound = true
	for _, ds := range ck.in.DaemonSets {
		if ds == nil {
			continue
		}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:      ds.Name + "-" + n.name,
				Namespace: ds.Namespace,
				Labels:    ds.Spec.Template.Labels,
			},
			Spec: ds.Spec.Template.Spec,
		}
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(n.obj.Spec.Taints, p.Spec.Tolerations, blocksScheduling); untolerated {
			continue
		}
		if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n.obj); err != nil || !ok {
			continue
		}
		ck.checkAntiAffinitySymmetry(p, n)
		ck.bind(p, n)
	}
}

// blocksScheduling selects the taints kube-scheduler's TaintToleration filter
// enforces; PreferNoSchedule only lowers a node's score.
func blocksScheduling(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

func nodeObject(name string, labels map[string]string, taints []corev1.Taint, alloc corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Allocatable: alloc, Capacity: alloc},
	}
}

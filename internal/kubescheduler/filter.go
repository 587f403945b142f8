package kubescheduler

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Reasons a node is filtered out, worded as kube-scheduler words them in
// a pod's PodScheduled condition.
const (
	ReasonUnschedulable    = "node(s) were unschedulable"
	ReasonNodeName         = "node(s) didn't match the requested node name"
	ReasonNodeAffinity     = "node(s) didn't match Pod's node affinity/selector"
	ReasonNodePorts        = "node(s) didn't have free ports for the requested pod ports"
	ReasonTooManyPods      = "Too many pods"
	ReasonSpreadLabel      = "node(s) didn't match pod topology spread constraints (missing required label)"
	ReasonSpread           = "node(s) didn't match pod topology spread constraints"
	ReasonPodAffinity      = "node(s) didn't match pod affinity rules"
	ReasonPodAntiAffinity  = "node(s) didn't match pod anti-affinity rules"
	ReasonExistingAntiAffy = "node(s) didn't satisfy existing pods anti-affinity rules"
)

var unschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// cycle is one pod's scheduling cycle: what the PreFilter and PreScore
// extension points compute once, for every node to read.
type cycle struct {
	s        *Snapshot
	pod      *corev1.Pod
	pi       *podInfo
	affinity nodeaffinity.RequiredNodeAffinity
	// affinityOK caches the required node affinity per node: 0 unknown,
	// 1 matches, 2 does not.
	affinityOK []uint8
	volumes    *volumeFilter
	spread     *spreadFilter
	inter      *interFilter
}

func newCycle(s *Snapshot, pod *corev1.Pod) *cycle {
	c := &cycle{s: s, pod: pod, pi: s.opts.Cache.info(pod), affinity: nodeaffinity.GetRequiredNodeAffinity(pod),
		affinityOK: make([]uint8, len(s.nodes))}
	c.volumes = c.preFilterVolumes()
	c.spread = c.preFilterSpread()
	c.inter = c.preFilterInterPod()
	return c
}

func (c *cycle) matchesAffinity(i int) bool {
	if c.affinityOK[i] == 0 {
		c.affinityOK[i] = 2
		if ok, _ := c.affinity.Match(c.s.nodes[i].node); ok {
			c.affinityOK[i] = 1
		}
	}
	return c.affinityOK[i] == 1
}

// filter runs the default profile's filters on node i in kube-scheduler's
// order and returns the first failing filter's reasons, none when the pod
// fits. Only NodeResourcesFit gives more than one: every resource short.
func (c *cycle) filter(i int) []string {
	if r := c.filterNode(i); r != "" {
		return []string{r}
	}
	if rs := fitReasons(c.s.nodes[i], c.pi); len(rs) > 0 {
		return rs
	}
	if r := c.filterPods(i); r != "" {
		return []string{r}
	}
	return nil
}

// filterNode runs the filters that come before NodeResourcesFit: those
// that read the node alone, and NodePorts.
func (c *cycle) filterNode(i int) string {
	n := c.s.nodes[i]
	node, pod := n.node, c.pod
	if node.Spec.Unschedulable && !corev1helpers.TolerationsTolerateTaint(pod.Spec.Tolerations, &unschedulableTaint) {
		return ReasonUnschedulable
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return ReasonNodeName
	}
	if t := untoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations); t != nil {
		return "node(s) had untolerated taint {" + t.Key + ": " + t.Value + "}"
	}
	if !c.matchesAffinity(i) {
		return ReasonNodeAffinity
	}
	for _, want := range c.pi.ports {
		for _, have := range n.ports {
			if want.conflicts(have) {
				return ReasonNodePorts
			}
		}
	}
	return ""
}

// filterPods runs the filters after NodeResourcesFit: the volume filters
// (VolumeBinding, VolumeZone), then those that weigh the pods already
// placed, PodTopologySpread and InterPodAffinity.
func (c *cycle) filterPods(i int) string {
	node := c.s.nodes[i].node
	if c.volumes != nil {
		if r := c.volumes.filter(node); r != "" {
			return r
		}
	}
	if c.spread != nil {
		if r := c.spread.filter(c, node); r != "" {
			return r
		}
	}
	if c.inter != nil {
		if r := c.inter.filter(c.pi, node); r != "" {
			return r
		}
	}
	return ""
}

// untoleratedTaint is the first NoSchedule or NoExecute taint the
// tolerations do not tolerate (TaintToleration's filter), nil for none.
func untoleratedTaint(taints []corev1.Taint, tols []corev1.Toleration) *corev1.Taint {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(tols, t) {
			return t
		}
	}
	return nil
}

// fitReasons is NodeResourcesFit's filter: the pod count, and each
// resource the pod requests against what the node has left.
func fitReasons(n *nodeInfo, pi *podInfo) []string {
	var out []string
	if int64(len(n.pods))+1 > n.maxPods {
		out = append(out, ReasonTooManyPods)
	}
	r := pi.req
	if r.cpu > 0 && r.cpu > n.alloc.cpu-n.req.cpu {
		out = append(out, "Insufficient cpu")
	}
	if r.mem > 0 && r.mem > n.alloc.mem-n.req.mem {
		out = append(out, "Insufficient memory")
	}
	if r.eph > 0 && r.eph > n.alloc.eph-n.req.eph {
		out = append(out, "Insufficient ephemeral-storage")
	}
	if len(r.scalar) == 0 {
		return out
	}
	names := make([]string, 0, len(r.scalar))
	for k := range r.scalar {
		names = append(names, string(k))
	}
	sort.Strings(names)
	for _, k := range names {
		name := corev1.ResourceName(k)
		if r.scalar[name] > n.alloc.scalar[name]-n.req.scalar[name] {
			out = append(out, "Insufficient "+k)
		}
	}
	return out
}

package plancheck

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// replay binds the planned pods in plan order, running kube-scheduler's
// filters on each against the pods bound before it.
func (ck *checker) replay() {
	for i, pl := range ck.plan.Placements {
		n := ck.targets[i]
		if n == nil || pl.Pod == nil {
			continue // malformed; checkStructure reported it
		}
		if n.claim >= 0 && !n.daemonsBound {
			ck.addDaemonPods(n)
		}
		// A claim no type can launch has no node to check against; the
		// structure check reported it. Its pods still count for topology.
		if n.claim < 0 || n.launchType != nil {
			ck.filter(pl.Pod, n)
		}
		ck.bind(pl.Pod, n)
	}
}

// filters are kube-scheduler's filters in the order the checker runs them:
// those that look at the node alone first, then those that look at the pods
// bound across the cluster, so that a probe (see fits) that stops at the
// first refusal rarely pays for the expensive ones.
func (ck *checker) filters() []func(*corev1.Pod, *node) {
	return []func(*corev1.Pod, *node){
		ck.checkResources,
		ck.checkTaints,
		ck.checkNodeAffinity,
		ck.checkHostPorts,
		ck.checkVolumes,
		ck.checkPodAffinity,
		ck.checkPodAntiAffinity,
		ck.checkTopologySpread,
	}
}

// filter runs every check on one pod and node, reporting every refusal.
func (ck *checker) filter(p *corev1.Pod, n *node) {
	for _, f := range ck.filters() {
		f(p, n)
	}
}

// fits runs the first count filters on one pod and node, stops at the first
// refusal, and reports nothing: it asks whether kube-scheduler would let the
// pod onto the node, rather than judging a placement the plan made.
func (ck *checker) fits(p *corev1.Pod, n *node, count int) bool {
	mark := len(ck.violations)
	defer func() { ck.violations = ck.violations[:mark] }()
	for _, f := range ck.filters()[:count] {
		if f(p, n); len(ck.violations) > mark {
			return false
		}
	}
	return true
}

// nodeLocalFilters is how many of filters look at the node and its own pods
// only; the rest look at pods across the cluster.
const nodeLocalFilters = 5

// checkTaints is kube-scheduler's TaintToleration filter.
func (ck *checker) checkTaints(p *corev1.Pod, n *node) {
	if t, untolerated := corev1helpers.FindMatchingUntoleratedTaint(n.obj.Spec.Taints, p.Spec.Tolerations, blocksScheduling); untolerated {
		ck.report(p, n.name, "taints", fmt.Sprintf("taint %s is not tolerated", taintString(t)))
	}
}

// checkNodeAffinity is kube-scheduler's NodeAffinity filter: the nodeSelector
// and one of the required node affinity terms must match.
func (ck *checker) checkNodeAffinity(p *corev1.Pod, n *node) {
	ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n.obj)
	if err == nil && ok {
		return
	}
	keys := slices.Collect(maps.Keys(p.Spec.NodeSelector))
	var required *corev1.NodeSelector
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	keys = append(keys, selectorKeys(required)...)
	selector := "<none>"
	if len(p.Spec.NodeSelector) > 0 {
		selector = labels.Set(p.Spec.NodeSelector).String()
	}
	detail := fmt.Sprintf("nodeSelector %s and required node affinity %s do not match the node (%s)",
		selector, nodeSelectorString(required), nodeLabelsFor(n, keys))
	if err != nil {
		detail += ": " + err.Error()
	}
	ck.report(p, n.name, "node-affinity", detail)
}

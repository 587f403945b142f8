package plancheck

import corev1 "k8s.io/api/core/v1"

// A trial node is a node the plan does not launch, added to the final node
// set for as long as one question takes ("would this pod fit on a fresh node
// of that type?") and then removed without a trace, so that the question is
// asked of exactly the cluster the plan leaves plus that one node, as
// kube-scheduler would see it if the node came up. Copying the whole state
// per question would cost as much as the replay itself.

// trialMark is what addTrial must restore.
type trialMark struct {
	node       *node
	all        int // len(index.all) before the trial
	violations int
}

// addTrial adds n to the node set and binds its DaemonSet pods. The
// violations those binds report are dropped by removeTrial: they would be
// about a node the plan never launches.
func (ck *checker) addTrial(n *node) trialMark {
	m := trialMark{node: n, all: len(ck.index.all), violations: len(ck.violations)}
	n.idx = len(ck.nodes)
	n.claim = -1
	n.used = map[corev1.ResourceName]int64{}
	ck.nodes = append(ck.nodes, n)
	ix := ck.index
	// Domain tables number values over the node set, which just changed;
	// they are rebuilt when next asked for.
	clear(ix.tables)
	for _, c := range ix.counters {
		c.perNode = append(c.perNode, 0)
	}
	ck.addDaemonPods(n)
	return m
}

// removeTrial undoes addTrial. The trial node's pods were bound last, so in
// every index list they are at the end.
func (ck *checker) removeTrial(m trialMark) {
	n, ix := m.node, ck.index
	ix.all = ix.all[:m.all]
	nodeLabels := n.labels()
	for key, byValue := range ix.byDomain {
		if v, ok := nodeLabels[key]; ok {
			byValue[v] = trimBound(byValue[v], n)
		}
	}
	for key, byValue := range ix.antiByDomain {
		if v, ok := nodeLabels[key]; ok {
			terms := byValue[v]
			for len(terms) > 0 && terms[len(terms)-1].owner.node == n {
				terms = terms[:len(terms)-1]
			}
			byValue[v] = terms
		}
	}
	// Counters made during the trial have the trial's slot too.
	for _, c := range ix.counters {
		c.perNode = c.perNode[:n.idx]
	}
	clear(ix.tables)
	ck.nodes = ck.nodes[:n.idx]
	ck.violations = ck.violations[:m.violations]
}

func trimBound(pods []*boundPod, n *node) []*boundPod {
	for len(pods) > 0 && pods[len(pods)-1].node == n {
		pods = pods[:len(pods)-1]
	}
	return pods
}

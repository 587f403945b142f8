package planner

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/drift"
	"github.com/nodewright/nodewright/internal/disruption/protect"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// candidate is a node the planner may disrupt, with what it found out.
type candidate struct {
	claim *karpv1.NodeClaim
	node  *corev1.Node
	pool  *karpv1.NodePool
	// pods would have to move: bound, active, not DaemonSet or mirror pods.
	pods     []*corev1.Pod
	all      []*corev1.Pod // every pod bound to the node
	verdict  protect.Verdict
	price    float64
	spot     bool
	drift    drift.Drift
	drifted  bool
	expired  bool
	idleFor  time.Duration // since the last pod event or initialization
	created  time.Time
	view     *Candidate
	attrited bool      // carries the attrition taint
	since    time.Time // when the attrition taint was added
	// held says something other than a budget keeps the node from
	// consolidation: protection (do-not-disrupt, PDBs) or pods nominated to
	// it. A budget of one reason (Drifted, say) must not keep another
	// reason's phase from the node, so the phases ask this, not Blockers.
	held bool
}

// disruptionCost orders candidates: fewest pods to move first, then the
// most expensive (more saved), then by name for a stable order.
func disruptionCost(cs []*candidate) {
	sort.SliceStable(cs, func(i, j int) bool {
		if len(cs[i].pods) != len(cs[j].pods) {
			return len(cs[i].pods) < len(cs[j].pods)
		}
		if cs[i].price != cs[j].price {
			return cs[i].price > cs[j].price
		}
		return cs[i].claim.Name < cs[j].claim.Name
	})
}

// candidates reads every initialized, live NodeClaim with a node and a
// NodePool. It also counts, per NodePool, the nodes already being disrupted
// by reason, and the total. draining maps the pods drains will evict to
// their nodes (snapshot.Result.Draining).
func (p *planning) candidates(draining map[types.UID]string) {
	c := p.in.Cluster
	pools := map[string]*karpv1.NodePool{}
	for _, np := range c.NodePools {
		pools[np.Name] = np
	}
	nodes := snapshot.IndexNodes(c.Nodes)
	bound := map[string][]*corev1.Pod{}
	for _, pod := range c.Pods {
		if snapshot.Bound(pod) {
			bound[pod.Spec.NodeName] = append(bound[pod.Spec.NodeName], pod)
		}
	}
	pending := map[types.UID]bool{}
	for _, pod := range c.Pods {
		if pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil {
			pending[pod.UID] = true
		}
	}
	for _, nc := range c.NodeClaims {
		pool := nc.Labels[karpv1.NodePoolLabelKey]
		p.total[pool]++
		switch {
		case nc.DeletionTimestamp != nil:
			p.disrupting[pool][reasonOf(nc)]++
		case nc.Annotations[DisruptingAnnotation] != "":
			p.disrupting[pool][Reason(nc.Annotations[DisruptingAnnotation])]++
		}
	}
	for _, nc := range c.NodeClaims {
		if nc.DeletionTimestamp != nil || nc.Annotations[DisruptingAnnotation] != "" {
			continue
		}
		init := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
		if init == nil || init.Status != metaTrue {
			continue
		}
		node := nodes.ClaimNode(nc)
		np := pools[nc.Labels[karpv1.NodePoolLabelKey]]
		if node == nil || node.DeletionTimestamp != nil || np == nil {
			continue
		}
		cd := &candidate{claim: nc, node: node, pool: np, all: bound[node.Name], created: nc.CreationTimestamp.Time}
		for _, pod := range cd.all {
			if snapshot.MustMove(pod) {
				cd.pods = append(cd.pods, pod)
			}
		}
		nominated, fromDrains, inGrace := 0, 0, p.in.Now.Sub(init.LastTransitionTime.Time) < p.in.Options.NominationGrace
		for _, uid := range snapshot.Nominations(nc.Annotations[snapshot.NominatedPodsAnnotation]) {
			switch {
			case inGrace && pending[uid]:
				nominated++
			case draining[uid] != "":
				// A pod a drain will evict, nominated to a node launched to
				// take it: until it moves, the node only looks empty.
				fromDrains++
			}
		}
		cd.verdict = protect.Check(protect.Candidate{Node: node, Claim: nc, Pods: cd.all}, p.pdbs, p.in.Now)
		cd.price, cd.spot = offeringPrice(p.in.PoolTypes[np.Name], node.Labels)
		cd.drift, cd.drifted = drift.Drifted(np, nc, node, p.in.CloudDrift[nc.Name])
		cd.expired, _ = drift.Expired(nc, p.in.Now)
		last := init.LastTransitionTime.Time
		if nc.Status.LastPodEventTime.After(last) {
			last = nc.Status.LastPodEventTime.Time
		}
		cd.idleFor = p.in.Now.Sub(last)
		cd.since, cd.attrited = attritionSince(node)
		cd.view = &Candidate{Claim: nc.Name, Node: node.Name, NodePool: np.Name, Price: cd.price,
			Pods: len(cd.pods) + nominated, State: "Kept", Expired: cd.expired, Nominated: nominated, Policy: policyOff(np)}
		if cd.drifted {
			cd.view.Drift = cd.drift.String()
		}
		if nominated > 0 {
			// Pods on their way to the node: it is not idle, and they are
			// not counted among those that would have to move, so hold it.
			cd.view.Blockers = append(cd.view.Blockers, fmt.Sprintf("%d pending pods are nominated to it", nominated))
		}
		if fromDrains > 0 {
			cd.view.Blockers = append(cd.view.Blockers, fmt.Sprintf("%d pods of draining nodes are nominated to it", fromDrains))
		}
		nominated += fromDrains
		cd.held = nominated > 0 || cd.verdict.Blocked()
		for _, b := range cd.verdict.Blockers {
			cd.view.Blockers = append(cd.view.Blockers, b.Message)
		}
		p.cands = append(p.cands, cd)
	}
	sort.Slice(p.cands, func(i, j int) bool { return p.cands[i].claim.Name < p.cands[j].claim.Name })
}

const metaTrue = "True"

// reasonOf is the reason a deleting claim is disrupted for, from its
// DisruptionReason condition; "" (counted against every budget) when none.
func reasonOf(nc *karpv1.NodeClaim) Reason {
	if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason); c != nil {
		return Reason(c.Reason)
	}
	return ""
}

// offeringPrice is the hourly price of the offering a node runs on, and
// whether it is spot. Unavailable offerings still have a price.
func offeringPrice(its []*instancetype.InstanceType, labels map[string]string) (float64, bool) {
	spot := labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot
	for _, it := range its {
		if it.Name != labels[corev1.LabelInstanceTypeStable] {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == labels[corev1.LabelTopologyZone] && o.CapacityType == labels[karpv1.CapacityTypeLabelKey] {
				return o.Price, spot
			}
		}
	}
	return 0, spot
}

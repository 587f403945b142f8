package explain

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/budget"
	"github.com/nodewright/nodewright/internal/disruption/drift"
	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/disruption/protect"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// NodeExplanation is why a node is or is not being disrupted.
type NodeExplanation struct {
	Node, Claim, NodePool            string
	InstanceType, Zone, CapacityType string
	// Price is the node's offering's hourly price; 0 when unknown.
	Price float64
	// State is the planner's verdict: "Disrupting", "Attrition" or "Kept";
	// "NotCandidate" when the planner does not consider the node, for
	// NotCandidate's reason.
	State        string
	NotCandidate string
	// Command is what disrupts the node, when State is "Disrupting".
	Command *planner.Command
	// Blockers are the planner's reasons for keeping the node, in its words.
	Blockers []string
	// Pods is how many pods would have to move.
	Pods int
	// Protection is what protect.Check finds on the node: do-not-disrupt
	// pods (with the instant their annotation's duration lapses) and PDBs.
	Protection    []protect.Reason
	Warnings      []protect.Reason
	Consolidation Consolidation
	// Drift is the drift found, "" when none.
	Drift     string
	Expiry    Expiry
	Attrition Attrition
	// Budgets are the NodePool's budgets after this loop's commands.
	Budgets     *budget.Result
	BudgetError string
}

// Consolidation is where the node stands with its NodePool's consolidation
// policy.
type Consolidation struct {
	Policy karpv1.ConsolidationPolicy
	// After is consolidateAfter; nil is Never.
	After *time.Duration
	// IdleSince is the last pod event on the node, or its initialization;
	// zero when After is 0 or Never, where no pod event is kept.
	IdleSince time.Time
	// EligibleAt is IdleSince plus After: consolidation may take the node
	// from then on.
	EligibleAt time.Time
}

// Expiry is the NodeClaim's expireAfter.
type Expiry struct {
	// After is expireAfter; nil is Never.
	After   *time.Duration
	At      time.Time
	Expired bool
}

// Attrition is the node's drain-by-attrition state.
type Attrition struct {
	// Enabled is the NodePool's nodewright.dev/drain-by-attrition.
	Enabled bool
	MaxWait string // the raw annotation; "" for no bound
	// Draining says the node carries the attrition taint, since Since.
	Draining bool
	Since    time.Time
	// Protected are the do-not-disrupt pods it waits for, per the plan.
	Protected []string
}

// Node explains the node (or NodeClaim) name.
func Node(in Input, name string) (*NodeExplanation, error) {
	cluster := withUIDs(in.Cluster)
	node, claim := findNode(cluster, name)
	if node == nil && claim == nil {
		return nil, fmt.Errorf("node %s not found, nor a NodeClaim of that name; check the name, or that the manifests (-f) include it", name)
	}
	ex := &NodeExplanation{State: "NotCandidate"}
	if node != nil {
		ex.Node = node.Name
		ex.InstanceType = node.Labels[corev1.LabelInstanceTypeStable]
		ex.Zone = node.Labels[corev1.LabelTopologyZone]
		ex.CapacityType = node.Labels[karpv1.CapacityTypeLabelKey]
	}
	var pool *karpv1.NodePool
	if claim != nil {
		ex.Claim = claim.Name
		ex.NodePool = claim.Labels[karpv1.NodePoolLabelKey]
		if node == nil {
			// Launched but not registered: the launch labelled the claim.
			ex.InstanceType = claim.Labels[corev1.LabelInstanceTypeStable]
			ex.Zone = claim.Labels[corev1.LabelTopologyZone]
			ex.CapacityType = claim.Labels[karpv1.CapacityTypeLabelKey]
		}
		for _, np := range cluster.NodePools {
			if np.Name == ex.NodePool {
				pool = np
			}
		}
	}
	ex.NotCandidate = notCandidate(node, claim, pool)

	opts := planner.DefaultOptions()
	// The controller simulates a bounded number of nodes per loop and goes
	// on next loop; one answer must cover every node.
	opts.SingleNodeSimulations = len(cluster.NodeClaims) + 1
	plan := planner.Decide(planner.Input{Cluster: cluster, PDBs: in.PDBs, PoolTypes: in.PoolTypes, CloudDrift: in.CloudDrift,
		Now: in.Now, Options: opts})
	if claim != nil {
		for i := range plan.Candidates {
			c := plan.Candidates[i]
			if c.Claim != claim.Name {
				continue
			}
			ex.State, ex.NotCandidate, ex.Blockers, ex.Pods, ex.Price, ex.Drift = c.State, "", c.Blockers, c.Pods, c.Price, c.Drift
		}
		for i := range plan.Commands {
			for _, cl := range plan.Commands[i].Claims {
				if cl == claim.Name {
					ex.Command = &plan.Commands[i]
				}
			}
		}
		for _, a := range plan.Attrition {
			if a.Claim == claim.Name {
				ex.Attrition.Protected = a.Protected
			}
		}
		ex.Expiry.After = claim.Spec.ExpireAfter.Duration
		ex.Expiry.Expired, ex.Expiry.At = drift.Expired(claim, in.Now)
	}
	if node != nil {
		pods := podsOn(cluster, node.Name)
		pdbs, _ := protect.IndexPDBs(in.PDBs, cluster.Pods)
		v := protect.Check(protect.Candidate{Node: node, Claim: claim, Pods: pods}, pdbs, in.Now)
		ex.Protection, ex.Warnings = v.Blockers, v.Warnings
		for _, t := range node.Spec.Taints {
			if t.Key == planner.AttritionTaintKey {
				ex.Attrition.Draining = true
				if t.TimeAdded != nil {
					ex.Attrition.Since = t.TimeAdded.Time
				}
			}
		}
	}
	if pool != nil {
		d := pool.Spec.Disruption
		ex.Consolidation = Consolidation{Policy: d.ConsolidationPolicy, After: d.ConsolidateAfter.Duration}
		// The last pod event is kept only where consolidateAfter is a
		// positive duration (the disruption loop writes it nowhere else).
		if after := ex.Consolidation.After; claim != nil && after != nil && *after > 0 {
			ex.Consolidation.IdleSince = idleSince(claim)
			if !ex.Consolidation.IdleSince.IsZero() {
				ex.Consolidation.EligibleAt = ex.Consolidation.IdleSince.Add(*ex.Consolidation.After)
			}
		}
		ex.Attrition.Enabled = pool.Annotations[planner.DrainByAttritionAnnotation] == "true"
		ex.Attrition.MaxWait = pool.Annotations[planner.AttritionMaxWaitAnnotation]
		if r, ok := plan.Budgets[pool.Name]; ok {
			ex.Budgets = &r
		}
		if err := plan.BudgetErrors[pool.Name]; err != nil {
			ex.BudgetError = err.Error()
		}
	}
	return ex, nil
}

// findNode finds a node by name and its NodeClaim, or a NodeClaim by name
// and its node.
func findNode(c *snapshot.Cluster, name string) (*corev1.Node, *karpv1.NodeClaim) {
	nodes := snapshot.IndexNodes(c.Nodes)
	for _, nc := range c.NodeClaims {
		n := nodes.ClaimNode(nc)
		if nc.Name == name || (n != nil && n.Name == name) {
			return n, nc
		}
	}
	return nodes.ByName[name], nil
}

// notCandidate says why the planner would not look at a node at all, in
// the planner's own terms (see planner.candidates); "" when it would.
func notCandidate(node *corev1.Node, claim *karpv1.NodeClaim, pool *karpv1.NodePool) string {
	switch {
	case claim == nil:
		return "no NodeClaim manages this node: nodewright did not launch it and never disrupts it"
	case claim.DeletionTimestamp != nil:
		return "its NodeClaim is being deleted: the node is draining"
	case claim.Annotations[planner.DisruptingAnnotation] != "":
		return fmt.Sprintf("already chosen for disruption (%s: %s); its replacements are launching",
			planner.DisruptingAnnotation, claim.Annotations[planner.DisruptingAnnotation])
	case !meta.IsStatusConditionTrue(claim.Status.Conditions, karpv1.ConditionTypeInitialized):
		return "its NodeClaim is not initialized yet; nodes are disrupted only once initialized"
	case node == nil:
		return "no node has registered for its NodeClaim yet"
	case node.DeletionTimestamp != nil:
		return "the node is being deleted"
	case pool == nil:
		return fmt.Sprintf("its NodePool %q does not exist; nodewright disrupts only nodes of existing NodePools", claim.Labels[karpv1.NodePoolLabelKey])
	}
	return ""
}

func podsOn(c *snapshot.Cluster, node string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range c.Pods {
		if p.Spec.NodeName == node && snapshot.Bound(p) {
			out = append(out, p)
		}
	}
	return out
}

// idleSince is when consolidateAfter starts counting, as the planner
// counts it: the later of initialization and the last pod event.
func idleSince(nc *karpv1.NodeClaim) time.Time {
	c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
	if c == nil || c.Status != "True" {
		return time.Time{}
	}
	last := c.LastTransitionTime.Time
	if nc.Status.LastPodEventTime.After(last) {
		last = nc.Status.LastPodEventTime.Time
	}
	return last
}

package snapshot

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// Nominated knows which pods the provisioner nominated to a node. The
// lifecycle controller writes the node's name into the pod's
// status.nominatedNodeName when the node of a NodeClaim registers, so that
// kube-scheduler tries the planned node first and keeps its room for the pod
// against other pods. Such a pod still waits for capacity: it is not
// preempting its way onto a node, which is what a nominatedNodeName
// kube-scheduler wrote itself means. Nor is a pod whose nominated node no
// longer exists.
type Nominated struct {
	// ours holds each pod a live NodeClaim nominates with the claim's node,
	// once that node exists: a pod displaced from one claim and planned onto
	// another has both, and its nominatedNodeName may still name either.
	ours  map[podNode]bool
	nodes NodeIndex
}

type podNode struct {
	pod  types.UID
	node string
}

// NominatedNodes builds Nominated from the cluster's NodeClaims and nodes.
func NominatedNodes(claims []*karpv1.NodeClaim, nodes NodeIndex) Nominated {
	out := Nominated{ours: map[podNode]bool{}, nodes: nodes}
	for _, nc := range claims {
		if nc.DeletionTimestamp != nil {
			continue
		}
		node := nodes.ClaimNode(nc)
		if node == nil {
			continue
		}
		for _, uid := range Nominations(nc.Annotations[NominatedPodsAnnotation]) {
			out.ours[podNode{uid, node.Name}] = true
		}
	}
	return out
}

// ProvisionableAt is the package's ProvisionableAt, except that a pod whose
// status.nominatedNodeName is the node of a NodeClaim that nominates it, or
// a node that is gone, is judged as if it had none.
func (n Nominated) ProvisionableAt(p *corev1.Pod, now time.Time, untriedAfter time.Duration) bool {
	nnn := p.Status.NominatedNodeName
	own := nnn != "" && (n.ours[podNode{p.UID, nnn}] || n.nodes.ByName[nnn] == nil)
	return provisionableAt(p, now, untriedAfter, own)
}

// NominationsHold reports whether a claim's nominated pods are still reserved
// on it: until its node has been initialized for grace, after which
// kube-scheduler has had its chance to bind them (pods it has not tried at
// all stay reserved longer, and with Options.ReleaseDisplaced pods the bound
// ones leave no room for are released sooner; see Build).
func NominationsHold(nc *karpv1.NodeClaim, now time.Time, grace time.Duration) bool {
	if nc.DeletionTimestamp != nil {
		return false
	}
	c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
	if c == nil || c.Status != "True" {
		return true
	}
	return now.Sub(c.LastTransitionTime.Time) < grace
}

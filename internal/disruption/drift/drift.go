package drift

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Reason is why a NodeClaim is drifted, as its Drifted condition's reason
// and as disruption metrics name it. Cloud providers add their own
// ("ImageDrift").
type Reason string

// The reasons this package finds itself; Karpenter uses the same words.
const (
	// NodePoolDrifted: the NodePool's template (labels, annotations,
	// taints, startup taints, nodeClassRef, expireAfter,
	// terminationGracePeriod) changed since the claim was made.
	NodePoolDrifted Reason = "NodePoolDrifted"
	// RequirementsDrifted: the claim's labels no longer meet the NodePool's
	// requirements.
	RequirementsDrifted Reason = "RequirementsDrifted"
)

// Drift is a drift verdict a person can read: the reason, and what differs.
type Drift struct {
	Reason  Reason
	Message string
}

func (d Drift) String() string { return string(d.Reason) + ": " + d.Message }

// Eligible reports whether drift is evaluated for claim at all: only once it
// is initialized. Karpenter starts at Launched; waiting for Initialized
// means a node that is still starting (startup taints, a kubelet restart) is
// never replaced before it has served, and that the labels drift compares
// are the settled ones. Callers may skip the cloud provider's IsDrifted call
// for claims that are not eligible.
func Eligible(claim *karpv1.NodeClaim) bool {
	return meta.IsStatusConditionTrue(claim.Status.Conditions, karpv1.ConditionTypeInitialized)
}

// Drifted decides whether claim, launched from np, should be replaced
// because it no longer matches np. node is claim's node, or nil; its labels
// stand in for labels the claim lacks. cloudReason is the cloud provider's
// IsDrifted answer ("" when it has none). The checks run in Karpenter's
// order and the first that finds drift wins: template hash, requirements,
// cloud provider. A claim that is not Eligible is never drifted.
func Drifted(np *karpv1.NodePool, claim *karpv1.NodeClaim, node *corev1.Node, cloudReason string) (Drift, bool) {
	if !Eligible(claim) {
		return Drift{}, false
	}
	if d, ok := hashDrift(np, claim); ok {
		return d, true
	}
	if d, ok := requirementsDrift(np, claim, node); ok {
		return d, true
	}
	if cloudReason != "" {
		return Drift{Reason: Reason(cloudReason), Message: "the cloud provider reports the instance no longer matches its NodeClass"}, true
	}
	return Drift{}, false
}

// hashDrift compares the claim's stamped template hash with np's. A claim
// without a stamp, or with one of another HashVersion, is not drifted by
// hash: the two values are not comparable (see NeedsRestamp).
func hashDrift(np *karpv1.NodePool, claim *karpv1.NodeClaim) (Drift, bool) {
	stamped, ok := claim.Annotations[karpv1.NodePoolHashAnnotationKey]
	if !ok || claim.Annotations[karpv1.NodePoolHashVersionAnnotationKey] != HashVersion {
		return Drift{}, false
	}
	current := Hash(np)
	if stamped == current {
		return Drift{}, false
	}
	return Drift{
		Reason: NodePoolDrifted,
		Message: fmt.Sprintf("NodePool %s's template (labels, annotations, taints, startupTaints, nodeClassRef, expireAfter or terminationGracePeriod) changed: its hash is %s, the NodeClaim was made from %s",
			np.Name, current, stamped),
	}, true
}

// requirementsDrift checks every requirement of np against the claim's
// labels: a present label must have an allowed value, and a missing one is
// fine only for NotIn and DoesNotExist. minValues is ignored, as in
// Karpenter: it constrains launch choices, not a single node.
func requirementsDrift(np *karpv1.NodePool, claim *karpv1.NodeClaim, node *corev1.Node) (Drift, bool) {
	exprs := make([]corev1.NodeSelectorRequirement, len(np.Spec.Template.Spec.Requirements))
	for i, r := range np.Spec.Template.Spec.Requirements {
		exprs[i] = r.NodeSelectorRequirement
	}
	err := scheduling.FromNodeSelectorRequirements(exprs...).Matches(labelsOf(claim, node))
	if err == nil {
		return Drift{}, false
	}
	return Drift{
		Reason:  RequirementsDrifted,
		Message: fmt.Sprintf("NodeClaim no longer meets NodePool %s's requirements: %v", np.Name, err),
	}, true
}

// labelsOf returns the claim's labels, filled in with node labels the claim
// lacks. The claim's labels win: they are what nodewright launched, and a
// label edited on the node afterwards neither causes nor hides drift.
func labelsOf(claim *karpv1.NodeClaim, node *corev1.Node) map[string]string {
	if node == nil || len(node.Labels) == 0 {
		return claim.Labels
	}
	out := make(map[string]string, len(claim.Labels)+len(node.Labels))
	for k, v := range node.Labels {
		out[k] = v
	}
	for k, v := range claim.Labels {
		out[k] = v
	}
	return out
}

package nodeclaim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/protect"
)

// Karpenter's names for a failed consistency check: the reason of a False
// ConsistentStateFound and of the warning event naming each issue.
const (
	ReasonConsistencyCheckFailed = "ConsistencyCheckFailed"
	EventFailedConsistencyCheck  = "FailedConsistencyCheck"
)

// minShapeRatio is how much of a resource its NodeClaim promised a node
// must have: Karpenter's node shape check flags less than 90%, which no
// rounding of capacity explains.
const minShapeRatio = 0.9

// shapeIssues is Karpenter's node shape check: an initialized, undeleted
// claim's node must have at least minShapeRatio of the capacity the claim
// recorded at launch, for each resource the claim's pods requested. A node
// short of what its pods were planned against leaves them pending.
func shapeIssues(nc *karpv1.NodeClaim, node *corev1.Node) []string {
	if nc.DeletionTimestamp != nil || !isTrue(nc, karpv1.ConditionTypeInitialized) {
		return nil
	}
	names := make([]string, 0, len(nc.Spec.Resources.Requests))
	for name := range nc.Spec.Resources.Requests {
		names = append(names, string(name))
	}
	sort.Strings(names) // a stable message, written only when it changes
	var out []string
	for _, n := range names {
		name := corev1.ResourceName(n)
		requested, expected := nc.Spec.Resources.Requests[name], nc.Status.Capacity[name]
		if requested.IsZero() || expected.IsZero() {
			continue
		}
		found := node.Status.Capacity[name]
		ratio := found.AsApproximateFloat64() / expected.AsApproximateFloat64()
		if ratio < minShapeRatio {
			out = append(out, fmt.Sprintf("expected %s of resource %s, but found %s (%0.1f%% of expected)",
				expected.String(), name, found.String(), ratio*100))
		}
	}
	return out
}

// drainIssues is Karpenter's termination check: a deleted claim whose node
// cannot be drained because a PodDisruptionBudget refuses to let one of its
// pods be evicted, once per PDB.
func drainIssues(nc *karpv1.NodeClaim, node *corev1.Node, pods []*corev1.Pod, pdbs []*policyv1.PodDisruptionBudget, now time.Time) []string {
	if nc.DeletionTimestamp == nil || node == nil {
		return nil
	}
	// A PDB whose selector cannot be read covers nothing, as the Eviction
	// API has it; it blocks no drain.
	idx, _ := protect.IndexPDBs(pdbs, pods)
	v := protect.Check(protect.Candidate{Node: node, Claim: nc, Pods: pods}, idx, now)
	seen := map[string]bool{}
	var out []string
	for _, b := range v.Blockers {
		if (b.Kind != protect.KindPDB && b.Kind != protect.KindMultiplePDBs) || seen[b.PDB] {
			continue
		}
		seen[b.PDB] = true
		out = append(out, fmt.Sprintf("can't drain node %s, PDB %q is blocking evictions", node.Name, b.PDB))
	}
	return out
}

// consistentState is the ConsistentStateFound condition for the issues a
// check found: True with none, else False naming them. (Karpenter's message
// is a fixed "Consistency Check Failed" and only its events name the
// issues; naming them here tells `kubectl describe` readers why.)
func consistentState(issues []string) *metav1.Condition {
	if len(issues) == 0 {
		return &metav1.Condition{Type: karpv1.ConditionTypeConsistentStateFound, Status: metav1.ConditionTrue,
			Reason: karpv1.ConditionTypeConsistentStateFound}
	}
	return &metav1.Condition{Type: karpv1.ConditionTypeConsistentStateFound, Status: metav1.ConditionFalse,
		Reason: ReasonConsistencyCheckFailed, Message: strings.Join(issues, "; ")}
}

// newIssues are the issues the claim's condition does not name yet: each
// is announced once, not at every check.
func newIssues(nc *karpv1.NodeClaim, issues []string) []string {
	var old string
	for _, c := range nc.Status.Conditions {
		if c.Type == karpv1.ConditionTypeConsistentStateFound && c.Status == metav1.ConditionFalse {
			old = c.Message
		}
	}
	var out []string
	for _, i := range issues {
		if !strings.Contains(old, i) {
			out = append(out, i)
		}
	}
	return out
}

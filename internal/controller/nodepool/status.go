package nodepool

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// The NodePool conditions, as Karpenter names them.
const (
	ConditionReady                   = "Ready"
	ConditionNodeClassReady          = "NodeClassReady"
	ConditionValidationSucceeded     = "ValidationSucceeded"
	ConditionNodeRegistrationHealthy = "NodeRegistrationHealthy"
)

// Observed is what the status is decided from.
type Observed struct {
	// Claims are the NodePool's NodeClaims.
	Claims []karpv1.NodeClaim
	// Nodes are the nodes of those claims, by name.
	Nodes map[string]*corev1.Node
	// ClassErr is why the NodePool's NodeClass cannot be used, or nil.
	ClassErr error
	// NodeClassGeneration is the NodeClass's metadata.generation, 0 when
	// it could not be read.
	NodeClassGeneration int64
	// Registrations are the latest registration outcomes of the NodePool's
	// NodeClaims since it or its NodeClass last changed (Registrations).
	Registrations []Outcome
}

// Decide computes a NodePool's status. Every NodeClaim is one of its nodes,
// launched or not, as in Karpenter's cluster state; a node's capacity is
// its Node's once registered, else the NodeClaim's.
func Decide(np *karpv1.NodePool, obs Observed) karpv1.NodePoolStatus {
	st := karpv1.NodePoolStatus{Conditions: append([]metav1.Condition(nil), np.Status.Conditions...),
		NodeClassObservedGeneration: np.Status.NodeClassObservedGeneration}
	total := corev1.ResourceList{}
	for i := range obs.Claims {
		c := &obs.Claims[i]
		capacity := c.Status.Capacity
		if n := obs.Nodes[c.Status.NodeName]; n != nil {
			capacity = n.Status.Capacity
		}
		for name, q := range capacity {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
		if _, ok := total[name]; !ok {
			total[name] = resource.MustParse("0")
		}
	}
	st.Resources = total
	n := int64(len(obs.Claims))
	st.Nodes = &n

	gen := np.Generation
	set := func(t string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	var notReady *cloudprovider.NodeClassNotReadyError
	switch {
	case obs.ClassErr == nil:
		set(ConditionNodeClassReady, metav1.ConditionTrue, ConditionNodeClassReady, "")
	case errors.As(obs.ClassErr, &notReady):
		set(ConditionNodeClassReady, metav1.ConditionFalse, "NodeClassNotReady", notReady.Error())
	default:
		set(ConditionNodeClassReady, metav1.ConditionUnknown, "NodeClassUnknown", obs.ClassErr.Error())
	}
	if err := validate(np); err != nil {
		set(ConditionValidationSucceeded, metav1.ConditionFalse, "NodePoolValidationFailed", err.Error())
	} else {
		set(ConditionValidationSucceeded, metav1.ConditionTrue, ConditionValidationSucceeded, "")
	}
	// A changed spec or NodeClass starts NodeRegistrationHealthy over, as
	// nodes may now be launched differently. A class generation never
	// observed (a status written before it was recorded) is no change.
	classChanged := obs.NodeClassGeneration != 0 && st.NodeClassObservedGeneration != 0 && obs.NodeClassGeneration != st.NodeClassObservedGeneration
	if obs.NodeClassGeneration != 0 {
		st.NodeClassObservedGeneration = obs.NodeClassGeneration
	}
	prev := meta.FindStatusCondition(st.Conditions, ConditionNodeRegistrationHealthy)
	current := prev != nil && prev.ObservedGeneration == gen && !classChanged
	if c := registrationHealthy(prev, current, obs.Registrations); c != nil {
		set(c.Type, c.Status, c.Reason, c.Message)
	}
	var why []string
	for _, t := range []string{ConditionNodeClassReady, ConditionValidationSucceeded} {
		if c := meta.FindStatusCondition(st.Conditions, t); c.Status != metav1.ConditionTrue {
			why = append(why, fmt.Sprintf("%s=%s: %s", t, c.Status, c.Message))
		}
	}
	if len(why) == 0 {
		set(ConditionReady, metav1.ConditionTrue, ConditionReady, "")
	} else {
		set(ConditionReady, metav1.ConditionFalse, "NotReady", strings.Join(why, "; "))
	}
	return st
}

// validate checks what the CRD cannot: that every requirement means
// something to the scheduler (Gt and Lt take one integer).
func validate(np *karpv1.NodePool) error {
	for i, r := range np.Spec.Template.Spec.Requirements {
		switch r.Operator {
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(r.Values) != 1 {
				return fmt.Errorf("spec.template.spec.requirements[%d] (%s %s) needs exactly one value", i, r.Key, r.Operator)
			}
			if _, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil {
				return fmt.Errorf("spec.template.spec.requirements[%d] (%s %s) value %q is not an integer", i, r.Key, r.Operator, r.Values[0])
			}
		}
	}
	return nil
}

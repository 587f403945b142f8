package kwok

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Unhealthy fault injection: a user or a test annotates a Node with
// UnhealthyAnnotation, and the agent breaks the condition it names and keeps
// it broken for as long as the annotation stays, as a node whose kubelet
// died and never came back. kwok alone cannot: it reports every Node it
// animates Ready, and the notReady window of a KWOKNodeClass ends. This is
// the fault node repair exists for. This file is the functional core;
// unhealthy_agent.go does the writing.

// Annotations and reasons of unhealthy fault injection.
const (
	// UnhealthyAnnotation on a Node breaks one of its conditions until the
	// annotation is removed. The value names the condition, optionally with
	// the broken status: "" or "Ready" is Ready=False, "Ready=Unknown" is
	// Ready=Unknown, and any other type (MemoryPressure, a node problem
	// detector's KernelDeadlock) is True unless the value says otherwise.
	UnhealthyAnnotation = "nodewright.dev/kwok-unhealthy"
	// UnhealthySinceAnnotation (RFC 3339) on a Node records when the fault
	// began, which is when the broken condition changed: node repair counts
	// its toleration from it. The agent writes it on the fault's first pass;
	// set beside UnhealthyAnnotation, it backdates the fault or breaks
	// several Nodes at one instant. It also tells the agent which Nodes it
	// holds, so that it gives them, and no others, back to kwok once
	// UnhealthyAnnotation goes.
	UnhealthySinceAnnotation = "nodewright.dev/kwok-unhealthy-since"
	// UnhealthyReason is the reason of the condition the fault breaks.
	UnhealthyReason = "KWOKUnhealthy"
	// HealedReason is the reason of a condition the fault broke, written
	// back healthy when the fault ends, so that neither waits for kwok's
	// next heartbeat.
	HealedReason = "KWOKHealed"
	// UnhealthyInvalidReason is the Warning event on a Node whose
	// UnhealthyAnnotation could not be read.
	UnhealthyInvalidReason = "KWOKUnhealthyInvalid"
)

// unhealthyFault is a condition and the status that breaks it.
type unhealthyFault struct {
	Condition corev1.NodeConditionType
	Status    corev1.ConditionStatus
}

// parseUnhealthy reads UnhealthyAnnotation's value.
func parseUnhealthy(v string) (unhealthyFault, error) {
	typ, status, explicit := strings.Cut(strings.TrimSpace(v), "=")
	typ = strings.TrimSpace(typ)
	f := unhealthyFault{Condition: corev1.NodeConditionType(typ)}
	if typ == "" {
		f.Condition = corev1.NodeReady
	}
	if strings.ContainsAny(typ, " \t") {
		return f, fmt.Errorf("annotation %s: %q is not a condition type: write Ready, Ready=Unknown or MemoryPressure=True, say", UnhealthyAnnotation, v)
	}
	f.Status = corev1.ConditionTrue
	if f.Condition == corev1.NodeReady {
		f.Status = corev1.ConditionFalse
	}
	if explicit {
		s, ok := map[string]corev1.ConditionStatus{"true": corev1.ConditionTrue, "false": corev1.ConditionFalse, "unknown": corev1.ConditionUnknown}[strings.ToLower(strings.TrimSpace(status))]
		if !ok {
			return f, fmt.Errorf("annotation %s: %q: the status must be True, False or Unknown", UnhealthyAnnotation, v)
		}
		if s == healthyStatus(f.Condition) {
			return f, fmt.Errorf("annotation %s: %q: %s=%s is healthy", UnhealthyAnnotation, v, f.Condition, s)
		}
		f.Status = s
	}
	return f, nil
}

// healthyStatus is a condition's status on a healthy node: Ready is True,
// and every other condition kubelets and node problem detectors report
// (pressure, NetworkUnavailable, KernelDeadlock) is False.
func healthyStatus(t corev1.NodeConditionType) corev1.ConditionStatus {
	if t == corev1.NodeReady {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

// unhealthyPlan is what the agent does about UnhealthyAnnotation on a Node.
type unhealthyPlan struct {
	// Held is true while the fault is on: the agent keeps the Node from
	// kwok, and its notReady window waits.
	Held bool
	// Hold asks to set NotReadyLabel, so that kwok stops reporting the
	// Node, and UnhealthySinceAnnotation to Since unless it is there,
	// before the status is written; Release asks to remove both, giving the
	// Node back to kwok.
	Hold, Release bool
	// Since is when the fault began.
	Since time.Time
	// Conditions are to be written into the Node's status: the broken one,
	// and those an earlier fault broke that no fault holds now. Empty when
	// the status is as it should be.
	Conditions []corev1.NodeCondition
	// Err says why the annotation could not be read; the Node is then
	// treated as not asked.
	Err error
}

// planUnhealthy decides, from the Node alone, what the fault needs done at
// now. Repeated passes change nothing once the Node is as planned, and the
// broken condition keeps its transition time, which node repair counts from.
func planUnhealthy(node *corev1.Node, now time.Time) unhealthyPlan {
	var plan unhealthyPlan
	var fault *unhealthyFault
	if v, asked := node.Annotations[UnhealthyAnnotation]; asked {
		f, err := parseUnhealthy(v)
		if err != nil {
			plan.Err = err
		} else {
			fault = &f
		}
	}
	_, marked := node.Annotations[UnhealthySinceAnnotation]
	labelled := node.Labels[NotReadyLabel] == "true"
	plan.Held = fault != nil
	plan.Hold = fault != nil && (!marked || !labelled)
	plan.Release = fault == nil && marked
	if fault == nil && !marked {
		// Not the fault's Node: a notReady window may hold it, with its own
		// condition, which is not ours to mend.
		return plan
	}
	plan.Since = now
	if at, err := time.Parse(time.RFC3339, node.Annotations[UnhealthySinceAnnotation]); err == nil && !at.After(now) {
		plan.Since = at
	}
	stamp, since := metav1.NewTime(now), metav1.NewTime(plan.Since)
	for _, c := range node.Status.Conditions {
		switch {
		case fault != nil && c.Type == fault.Condition:
			if c.Status == fault.Status && c.Reason == UnhealthyReason {
				fault = nil // already broken as asked
				continue
			}
			broken := corev1.NodeCondition{Type: c.Type, Status: fault.Status, Reason: UnhealthyReason, Message: unhealthyMessage(*fault),
				LastHeartbeatTime: stamp, LastTransitionTime: since}
			if c.Status == fault.Status {
				broken.LastTransitionTime = c.LastTransitionTime
			}
			plan.Conditions = append(plan.Conditions, broken)
			fault = nil
		case c.Reason == UnhealthyReason:
			plan.Conditions = append(plan.Conditions, corev1.NodeCondition{Type: c.Type, Status: healthyStatus(c.Type), Reason: HealedReason,
				Message: "kwok fault injection: annotation " + UnhealthyAnnotation + " removed", LastHeartbeatTime: stamp, LastTransitionTime: stamp})
		}
	}
	if fault != nil { // a condition the Node did not report yet
		plan.Conditions = append(plan.Conditions, corev1.NodeCondition{Type: fault.Condition, Status: fault.Status, Reason: UnhealthyReason,
			Message: unhealthyMessage(*fault), LastHeartbeatTime: stamp, LastTransitionTime: since})
	}
	return plan
}

func unhealthyMessage(f unhealthyFault) string {
	return fmt.Sprintf("kwok fault injection: %s=%s until annotation %s is removed", f.Condition, f.Status, UnhealthyAnnotation)
}

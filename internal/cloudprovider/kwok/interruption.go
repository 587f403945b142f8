package kwok

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// Interruption fault injection: a user or a test annotates a Node, or its
// NodeClaim, with InterruptAnnotation; the agent issues the notice, recorded
// on the Node with the time the instance goes; the provider's interruption
// source delivers it to the interruption controller as AWS's queue delivers
// EC2's events; and when the time comes the agent terminates the instance
// (deletes its Node) unless the controller has replaced it first. This file
// is the functional core; interruption_agent.go does the writing.

// Annotations of interruption fault injection.
const (
	// InterruptAnnotation on a Node or its NodeClaim asks for an
	// interruption of that instance, once: spot (a spot interruption
	// warning), maintenance (a scheduled maintenance event) or rebalance (a
	// rebalance recommendation). Case does not matter, and the long names
	// SpotInterruption, ScheduledMaintenance and RebalanceRecommendation
	// are accepted too.
	InterruptAnnotation = "nodewright.dev/kwok-interrupt"
	// InterruptWindowAnnotation (a Go duration), beside InterruptAnnotation,
	// is how long after the notice the instance goes: by default two
	// minutes for spot, as EC2 gives, and DefaultMaintenanceWindow for
	// maintenance. A rebalance recommendation ends nothing.
	InterruptWindowAnnotation = "nodewright.dev/kwok-interrupt-window"
	// InterruptionAnnotation on a Node records, as JSON, the notice issued
	// for it: its kind, when it was issued and when the instance goes, or
	// why the request was refused.
	InterruptionAnnotation = "nodewright.dev/kwok-interruption"
	// InterruptionDeliveredAnnotation (RFC 3339) on a Node records that the
	// interruption controller has handled its notice.
	InterruptionDeliveredAnnotation = "nodewright.dev/kwok-interruption-delivered"

	// SpotInterruptionWindow is EC2's notice before a spot instance goes.
	SpotInterruptionWindow = 2 * time.Minute
	// DefaultMaintenanceWindow is how long after a scheduled maintenance
	// notice the instance goes. AWS gives days; a rehearsal needs minutes.
	DefaultMaintenanceWindow = 10 * time.Minute
)

// interruptKinds maps InterruptAnnotation's values, lower-cased, to kinds.
var interruptKinds = map[string]cloudprovider.InterruptionKind{
	"spot":                    cloudprovider.SpotInterruption,
	"spotinterruption":        cloudprovider.SpotInterruption,
	"maintenance":             cloudprovider.ScheduledChange,
	"scheduledmaintenance":    cloudprovider.ScheduledChange,
	"rebalance":               cloudprovider.RebalanceRecommendation,
	"rebalancerecommendation": cloudprovider.RebalanceRecommendation,
}

// interruptionRecord is InterruptionAnnotation's content.
type interruptionRecord struct {
	Kind     cloudprovider.InterruptionKind `json:"kind,omitempty"`
	NoticeAt time.Time                      `json:"noticeAt"`
	// TerminateAt is when the instance goes; nil for a rebalance
	// recommendation, which ends nothing.
	TerminateAt *time.Time `json:"terminateAt,omitempty"`
	// Error, when set, is why the request was refused; nothing else happens
	// to the instance, and the controller counts the notice unparseable.
	Error string `json:"error,omitempty"`
}

// parseInterrupt reads InterruptAnnotation's and InterruptWindowAnnotation's
// values into a kind and the time from notice to termination (zero for a
// rebalance recommendation).
func parseInterrupt(kind, window string) (cloudprovider.InterruptionKind, time.Duration, error) {
	k, ok := interruptKinds[strings.ToLower(strings.TrimSpace(kind))]
	if !ok {
		return "", 0, fmt.Errorf("annotation %s: unknown interruption %q: use spot, maintenance or rebalance", InterruptAnnotation, kind)
	}
	d := SpotInterruptionWindow
	if k == cloudprovider.ScheduledChange {
		d = DefaultMaintenanceWindow
	}
	if k == cloudprovider.RebalanceRecommendation {
		d = 0
	}
	if window != "" && k != cloudprovider.RebalanceRecommendation {
		w, err := time.ParseDuration(window)
		if err != nil {
			return "", 0, fmt.Errorf("annotation %s: %w", InterruptWindowAnnotation, err)
		}
		if w < 0 {
			return "", 0, fmt.Errorf("annotation %s: %s is negative", InterruptWindowAnnotation, window)
		}
		d = w
	}
	return k, d, nil
}

// notice returns the notice to record on a Node that has none yet, from the
// request on the Node or else on its NodeClaim (annotations claimAnn, nil
// when there is none); ok is false when neither asks for one.
func notice(nodeAnn, claimAnn map[string]string, now time.Time) (rec interruptionRecord, ok bool) {
	if _, done := nodeAnn[InterruptionAnnotation]; done {
		return interruptionRecord{}, false
	}
	ann := nodeAnn
	if _, asked := ann[InterruptAnnotation]; !asked {
		ann = claimAnn
	}
	kind, asked := ann[InterruptAnnotation]
	if !asked {
		return interruptionRecord{}, false
	}
	rec.NoticeAt = now.UTC()
	k, window, err := parseInterrupt(kind, ann[InterruptWindowAnnotation])
	if err != nil {
		rec.Error = err.Error()
		return rec, true
	}
	rec.Kind = k
	if k != cloudprovider.RebalanceRecommendation {
		at := rec.NoticeAt.Add(window)
		rec.TerminateAt = &at
	}
	return rec, true
}

func encodeInterruption(rec interruptionRecord) string {
	b, err := json.Marshal(rec)
	if err != nil {
		// A struct of strings and times always marshals.
		panic(fmt.Sprintf("encoding an interruption record: %v", err))
	}
	return string(b)
}

// recordOf reads the Node's notice; ok is false when it has none.
func recordOf(node *corev1.Node) (rec interruptionRecord, ok bool, err error) {
	s, ok := node.Annotations[InterruptionAnnotation]
	if !ok {
		return rec, false, nil
	}
	if err := json.Unmarshal([]byte(s), &rec); err != nil {
		return rec, true, fmt.Errorf("annotation %s: %w", InterruptionAnnotation, err)
	}
	return rec, true, nil
}

// terminationDue reports whether the notice's time to go has come.
func terminationDue(rec interruptionRecord, now time.Time) bool {
	return rec.Error == "" && rec.TerminateAt != nil && !now.Before(*rec.TerminateAt)
}

// undelivered returns the message for node's notice when the controller has
// not handled it yet; ok is false otherwise.
func undelivered(node *corev1.Node) (msg cloudprovider.InterruptionMessage, ok bool) {
	if !isInstance(node) {
		return msg, false
	}
	if _, done := node.Annotations[InterruptionDeliveredAnnotation]; done {
		return msg, false
	}
	rec, has, err := recordOf(node)
	if !has {
		return msg, false
	}
	msg.ID = fmt.Sprintf("kwok-%s-%d", node.Name, rec.NoticeAt.Unix())
	switch {
	case err != nil:
		msg.Err = fmt.Errorf("Node %s: %w", node.Name, err)
	case rec.Error != "":
		msg.Err = fmt.Errorf("Node %s: %s", node.Name, rec.Error)
	default:
		msg.Event = cloudprovider.Interruption{Kind: rec.Kind, InstanceIDs: []string{node.Name}, ID: msg.ID}
	}
	return msg, true
}

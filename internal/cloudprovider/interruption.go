package cloudprovider

import "context"

// The types below are the interface between a source of interruption events
// (AWS's SQS queue, the kwok provider's fault injection) and the
// interruption controller, so that one controller handles both and the
// controller's path can be rehearsed without a cloud.

// InterruptionKind is what an event means for the instances it names.
type InterruptionKind string

// The events the interruption controller handles. They are named as
// Karpenter's metrics name them, whatever the source calls them.
const (
	// SpotInterruption: the cloud takes the spot instance back in two
	// minutes.
	SpotInterruption InterruptionKind = "SpotInterruption"
	// RebalanceRecommendation: the spot instance is at higher risk; only
	// an event is recorded.
	RebalanceRecommendation InterruptionKind = "RebalanceRecommendation"
	// ScheduledChange: scheduled maintenance retires or reboots the
	// instance.
	ScheduledChange InterruptionKind = "ScheduledChange"
	// StateChange: the instance is stopping, stopped, shutting down or
	// terminated.
	StateChange InterruptionKind = "StateChange"
	// NoAction: a well-formed event that needs nothing (a state change to
	// running, a Health event of another service).
	NoAction InterruptionKind = "NoAction"
)

// Interruption is one parsed event.
type Interruption struct {
	Kind InterruptionKind
	// InstanceIDs name the instances as the last segment of their provider
	// IDs ("i-0abc" of "aws:///us-east-1a/i-0abc", "n1" of "kwok://n1").
	InstanceIDs []string
	// State is the new state of a StateChange.
	State string
	// ID is the event's ID, for logs.
	ID string
}

// Replaces reports whether the instances' NodeClaims must be replaced.
func (i Interruption) Replaces() bool {
	return i.Kind == SpotInterruption || i.Kind == ScheduledChange || i.Kind == StateChange
}

// InterruptionMessage is one message a source delivers: an event, or the
// reason it could not be read.
type InterruptionMessage struct {
	// ID names the message in logs.
	ID    string
	Event Interruption
	// Err is why the message could not be parsed; Event is then empty. The
	// controller counts such a message and acknowledges it, so that a bad
	// message does not come back for ever.
	Err error
	// Ack tells the source the message was handled, so that it is not
	// delivered again; nil when the source needs no acknowledgement. A
	// message not acknowledged (the controller could not reach the API
	// server) is delivered again later.
	Ack func(context.Context) error
}

// InterruptionSource delivers interruption events.
type InterruptionSource interface {
	// Receive waits a while, a long poll, for messages and returns those
	// that came, possibly none. An error is retried after a pause.
	Receive(ctx context.Context) ([]InterruptionMessage, error)
	// String names the source in logs.
	String() string
}

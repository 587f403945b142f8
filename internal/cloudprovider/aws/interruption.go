package aws

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// InterruptionKind is what an EC2 event means for the instances it names.
type InterruptionKind string

// The events Karpenter handles from its interruption queue.
const (
	// SpotInterruption: EC2 takes the spot instance back in two minutes.
	SpotInterruption InterruptionKind = "SpotInterruption"
	// RebalanceRecommendation: the spot instance is at higher risk; only
	// an event is recorded.
	RebalanceRecommendation InterruptionKind = "RebalanceRecommendation"
	// ScheduledChange: AWS Health schedules maintenance that retires or
	// reboots the instance.
	ScheduledChange InterruptionKind = "ScheduledChange"
	// StateChange: the instance is stopping, stopped, shutting down or
	// terminated.
	StateChange InterruptionKind = "StateChange"
	// NoAction: a well-formed event that needs nothing (a state change to
	// running, a Health event of another service).
	NoAction InterruptionKind = "NoAction"
)

// Interruption is one parsed queue message.
type Interruption struct {
	Kind        InterruptionKind
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

// eventBridge is the envelope EventBridge puts on the queue.
type eventBridge struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// stoppingStates are the instance states that end its node.
var stoppingStates = []string{"stopping", "stopped", "shutting-down", "terminated"}

// ParseInterruption reads one message body. A body that is not an event
// Karpenter's rules send is an error: the caller deletes the message and
// counts it, rather than receiving it again for ever.
func ParseInterruption(body string) (Interruption, error) {
	var ev eventBridge
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		return Interruption{}, fmt.Errorf("not an EventBridge event: %w", err)
	}
	if ev.Source == "" || ev.DetailType == "" {
		return Interruption{}, fmt.Errorf("not an EventBridge event: no source or detail-type")
	}
	out := Interruption{ID: ev.ID}
	switch {
	case ev.Source == "aws.ec2" && ev.DetailType == "EC2 Spot Instance Interruption Warning":
		out.Kind = SpotInterruption
		return out, instanceDetail(ev, &out)
	case ev.Source == "aws.ec2" && ev.DetailType == "EC2 Instance Rebalance Recommendation":
		out.Kind = RebalanceRecommendation
		return out, instanceDetail(ev, &out)
	case ev.Source == "aws.ec2" && ev.DetailType == "EC2 Instance State-change Notification":
		if err := instanceDetail(ev, &out); err != nil {
			return out, err
		}
		out.Kind = NoAction
		if slices.Contains(stoppingStates, out.State) {
			out.Kind = StateChange
		}
		return out, nil
	case ev.Source == "aws.health" && ev.DetailType == "AWS Health Event":
		var d struct {
			Service           string `json:"service"`
			EventTypeCategory string `json:"eventTypeCategory"`
			AffectedEntities  []struct {
				EntityValue string `json:"entityValue"`
			} `json:"affectedEntities"`
		}
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			return out, fmt.Errorf("AWS Health event %s: bad detail: %w", ev.ID, err)
		}
		out.Kind = NoAction
		if d.Service == "EC2" && d.EventTypeCategory == "scheduledChange" {
			out.Kind = ScheduledChange
			for _, e := range d.AffectedEntities {
				if strings.HasPrefix(e.EntityValue, "i-") {
					out.InstanceIDs = append(out.InstanceIDs, e.EntityValue)
				}
			}
		}
		return out, nil
	}
	return out, fmt.Errorf("event %s: %s from %s is not one nodewright handles", ev.ID, ev.DetailType, ev.Source)
}

func instanceDetail(ev eventBridge, out *Interruption) error {
	var d struct {
		InstanceID string `json:"instance-id"`
		State      string `json:"state"`
	}
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return fmt.Errorf("%s %s: bad detail: %w", ev.DetailType, ev.ID, err)
	}
	if !strings.HasPrefix(d.InstanceID, "i-") {
		return fmt.Errorf("%s %s: detail has no instance-id", ev.DetailType, ev.ID)
	}
	out.InstanceIDs = []string{d.InstanceID}
	out.State = d.State
	return nil
}

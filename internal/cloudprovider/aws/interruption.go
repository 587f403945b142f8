package aws

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// The parsed event types are the provider-neutral ones of package
// cloudprovider, which the interruption controller reads from any source;
// the aliases keep this package's names.
type (
	// InterruptionKind is what an EC2 event means for the instances it names.
	InterruptionKind = cloudprovider.InterruptionKind
	// Interruption is one parsed queue message.
	Interruption = cloudprovider.Interruption
)

// The events Karpenter handles from its interruption queue.
const (
	SpotInterruption        = cloudprovider.SpotInterruption
	RebalanceRecommendation = cloudprovider.RebalanceRecommendation
	ScheduledChange         = cloudprovider.ScheduledChange
	StateChange             = cloudprovider.StateChange
	NoAction                = cloudprovider.NoAction
)

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

package interruption

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// Actions, as karpenter_interruption_actions_performed_total labels them.
const (
	ActionCordonAndDrain = "CordonAndDrain"
	ActionNoAction       = "NoAction"
)

// decision is what to do about one event for one NodeClaim; the controller
// carries it out.
type decision struct {
	// Unavailable, when set, is the spot offering to mark short of capacity,
	// so that the replacement, and every launch for a while, avoids it.
	Unavailable *cloudprovider.Offering
	// Delete deletes the NodeClaim, which cordons its node, plans its pods
	// onto new capacity at once and drains the node as that capacity comes
	// up (the same path as drift's replacement).
	Delete bool
	// Action is counted, unless empty (a NodeClaim already going).
	Action string
	// EventType, Reason and Message are an event on the NodeClaim, unless
	// Reason is empty.
	EventType, Reason, Message string
}

// decide is the controller's functional core: what an event means for a
// NodeClaim of one of the instances it names.
func decide(ev cloudprovider.Interruption, nc *karpv1.NodeClaim) decision {
	if !ev.Replaces() {
		d := decision{Action: ActionNoAction}
		if ev.Kind == cloudprovider.RebalanceRecommendation {
			d.EventType, d.Reason = corev1.EventTypeNormal, string(ev.Kind)
			d.Message = fmt.Sprintf("rebalance recommendation (event %s): the spot instance is at higher risk of interruption; nothing done", ev.ID)
		}
		return d
	}
	var d decision
	// The spot offering is short even when the NodeClaim is already going:
	// its replacement must not land on the same offering.
	if ev.Kind == cloudprovider.SpotInterruption && nc.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot {
		d.Unavailable = &cloudprovider.Offering{InstanceType: nc.Labels[corev1.LabelInstanceTypeStable],
			Zone: nc.Labels[corev1.LabelTopologyZone], CapacityType: karpv1.CapacityTypeSpot}
	}
	if nc.DeletionTimestamp != nil {
		return d
	}
	d.Delete, d.Action = true, ActionCordonAndDrain
	d.EventType, d.Reason = corev1.EventTypeWarning, string(ev.Kind)
	d.Message = fmt.Sprintf("%s (event %s): replacing the NodeClaim before its instance goes", ev.Kind, ev.ID)
	if ev.Kind == cloudprovider.StateChange {
		d.Message = fmt.Sprintf("instance is %s (event %s): replacing the NodeClaim", ev.State, ev.ID)
	}
	return d
}

// instanceID is the last segment of a provider ID, which is how events name
// instances; "" for a NodeClaim not launched yet.
func instanceID(providerID string) string {
	for i := len(providerID) - 1; i >= 0; i-- {
		if providerID[i] == '/' {
			return providerID[i+1:]
		}
	}
	return providerID
}

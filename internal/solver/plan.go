package solver

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Plan is the solver's answer.
type Plan struct {
	// Placements in the order the solver decided them. Constraints between pods
	// (topology spread, pod affinity) hold when pods bind in this order, as
	// kube-scheduler checks each pod against the pods bound before it.
	Placements []Placement
	// NewClaims are the NodeClaims to launch.
	NewClaims []*NewClaim
	// Unschedulable pods, each with the reason.
	Unschedulable []Unschedulable
}

// Placement puts one pod on an existing node or on a new NodeClaim.
type Placement struct {
	Pod *corev1.Pod
	// Node names an existing or in-flight node; empty when NewClaim is set.
	Node string
	// NewClaim is an index into Plan.NewClaims, or -1.
	NewClaim int
}

// NewClaim is a NodeClaim to launch.
type NewClaim struct {
	NodePool string
	// Requirements the machine must meet: the NodePool's, narrowed by its pods'.
	// Single-valued keys become node labels; the zone and capacity type may stay
	// open so the provider can fall back to another offering.
	Requirements scheduling.Requirements
	// InstanceTypes that can hold the pods, cheapest first by their cheapest
	// offering that Requirements allow.
	InstanceTypes []*instancetype.InstanceType
	// Pods planned for the claim, in placement order.
	Pods []*corev1.Pod
	// Requests of the pods plus the DaemonSet pods the node will run.
	Requests corev1.ResourceList
	// DaemonSetRequests is the part of Requests that DaemonSets take.
	DaemonSetRequests corev1.ResourceList
	// Hostname is the placeholder hostname the plan used for hostname topology;
	// the real node's name replaces it.
	Hostname string
	// MinValuesRelaxed says whether a minValues of Requirements was lowered
	// to what the claim's instance types meet; nil unless BestEffort
	// judged a NodePool with minValues.
	MinValuesRelaxed *bool
	// Aim is the type the claim was sized for when the solver opened it
	// (see aim.go), while its pods still fit it; nil once they outgrew it.
	// A claim left part-empty launches as a smaller type of
	// InstanceTypes, and its Fill says how much of Aim it takes.
	Aim *instancetype.InstanceType
	// Short says Aim was chosen for fewer pods of the kind the claim was
	// opened for than there could have been: it holds more of them than
	// were left to place, or another type would hold a full load of them
	// for less a pod. More such pods would have filled this node or been
	// given a larger one.
	Short bool
}

// Price is the hourly price of the cheapest offering of the cheapest type.
func (c *NewClaim) Price() float64 {
	for _, it := range c.InstanceTypes {
		if o, ok := it.Offerings.Cheapest(c.Requirements); ok {
			return o.Price
		}
	}
	return 0
}

// Fill is the largest share of any resource of the allocatable of the
// type the claim was sized for (Aim, or else its cheapest instance type)
// that its requests take, DaemonSets' included: 1 is a node its pods fill,
// 0 a claim with no instance type.
func (c *NewClaim) Fill() float64 {
	it := c.Aim
	if it == nil && len(c.InstanceTypes) > 0 {
		it = c.InstanceTypes[0]
	}
	if it == nil {
		return 0
	}
	alloc := it.Allocatable()
	fill := 0.0
	for name, q := range c.Requests {
		a, ok := alloc[name]
		if !ok || a.Sign() <= 0 {
			continue
		}
		fill = max(fill, q.AsApproximateFloat64()/a.AsApproximateFloat64())
	}
	return fill
}

// Cost is the summed price of the plan's new claims, per hour.
func (p *Plan) Cost() float64 {
	total := 0.0
	for _, c := range p.NewClaims {
		total += c.Price()
	}
	return total
}

// Unschedulable is a pod the solver could place nowhere, and why.
type Unschedulable struct {
	Pod    *corev1.Pod
	Reason *Reason
}

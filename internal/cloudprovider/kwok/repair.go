package kwok

import (
	"time"

	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// DefaultRepairToleration is how long Karpenter's repair policies tolerate
// a node that is not Ready before replacing it.
const DefaultRepairToleration = 30 * time.Minute

var _ cloudprovider.Repairer = (*Provider)(nil)

// RepairPolicies are Karpenter's (Ready False or Unknown) with the
// toleration of ProviderOptions.RepairToleration: a simulated node broken
// for good (UnhealthyAnnotation) need not hold a test for half an hour.
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy {
	tol := p.opts.RepairToleration
	if tol <= 0 {
		tol = DefaultRepairToleration
	}
	out := cloudprovider.DefaultRepairPolicies()
	for i := range out {
		out[i].Toleration = tol
	}
	return out
}

package livetest

import (
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// cheapest is the type of the cheapest available offering that claim's
// requirements allow and whose allocatable holds its requests.
func cheapest(types []*instancetype.InstanceType, claim *karpv1.NodeClaim) string {
	reqs := scheduling.NewRequirements()
	for _, r := range claim.Spec.Requirements {
		reqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	best, price := "", 0.0
	for _, it := range types {
		if it.Requirements.Compatible(reqs) != nil {
			continue
		}
		alloc := it.Allocatable()
		if alloc.Cpu().Cmp(*claim.Spec.Resources.Requests.Cpu()) < 0 {
			continue
		}
		for _, o := range it.Offerings {
			if o.Available && o.Allowed(reqs) && (best == "" || o.Price < price || o.Price == price && it.Name < best) {
				best, price = it.Name, o.Price
			}
		}
	}
	return best
}

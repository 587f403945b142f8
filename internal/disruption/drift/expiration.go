package drift

import (
	"time"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// Expired reports whether claim has reached its expireAfter at now, and
// when it does (or did). expireAfter counts from the claim's creation, as in
// Karpenter, and the claim is expired from that instant on. It comes from
// the claim's own spec, copied from the NodePool template at creation
// (where the CRD defaults it to 720h), so editing the NodePool's
// expireAfter affects existing claims only through drift. A nil duration
// ("Never") never expires and gives the zero time; so does a claim without
// a creation timestamp, which has not been created yet.
func Expired(claim *karpv1.NodeClaim, now time.Time) (bool, time.Time) {
	d := claim.Spec.ExpireAfter.Duration
	if d == nil || claim.CreationTimestamp.IsZero() {
		return false, time.Time{}
	}
	at := claim.CreationTimestamp.Add(*d)
	return !now.Before(at), at
}

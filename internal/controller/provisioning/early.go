package provisioning

import "github.com/nodewright/nodewright/internal/solver"

// DefaultEarlyFill is the share of a node its pods must fill for an early
// pass to launch it. The solver shrinks each NodeClaim to the cheapest type
// that holds its pods, so a batch's last, part-filled NodeClaims fill theirs
// by a half to nine tenths; held back, their pods join the next pass's and
// fill a larger node.
const DefaultEarlyFill = 0.9

// FullClaims splits a plan's new NodeClaims into those an early pass
// launches, whose pods fill at least minFill of the cheapest instance type
// (solver.NewClaim.Fill), and the rest, which wait for the batch's close.
// Both keep the plan's order.
func FullClaims(claims []*solver.NewClaim, minFill float64) (full, rest []*solver.NewClaim) {
	for _, c := range claims {
		if c.Fill() >= minFill {
			full = append(full, c)
		} else {
			rest = append(rest, c)
		}
	}
	return full, rest
}

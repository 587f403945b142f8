package provisioning

import "github.com/nodewright/nodewright/internal/solver"

// DefaultEarlyFill is the share of a node its pods must fill for an early
// pass to launch it.
const DefaultEarlyFill = 0.9

// FullClaims splits a plan's new NodeClaims into those an early pass
// launches and the rest, which wait for the batch's close. A NodeClaim is
// launched early when its pods fill at least minFill of the type the
// solver sized it for (solver.NewClaim.Fill), and that type was not
// chosen small because few pods of its kind were left (NewClaim.Short).
// Those held back are a pass's last, part-filled NodeClaims: the solver
// launches each as the cheapest type that holds its pods, and pods that
// come a second later would have filled a larger node with them. Both
// lists keep the plan's order.
func FullClaims(claims []*solver.NewClaim, minFill float64) (full, rest []*solver.NewClaim) {
	for _, c := range claims {
		if !c.Short && c.Fill() >= minFill {
			full = append(full, c)
		} else {
			rest = append(rest, c)
		}
	}
	return full, rest
}

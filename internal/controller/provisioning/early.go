package provisioning

import (
	"time"

	"github.com/nodewright/nodewright/internal/solver"
)

// DefaultEarlyFill is the share of a node its pods must fill for a pass to
// launch it while pods keep coming.
const DefaultEarlyFill = 0.9

// Hold says which of a pass's new NodeClaims wait while pods keep coming.
type Hold struct {
	// MinFill: a NodeClaim whose pods fill this share of the type the
	// solver sized it for launches (see Launchable).
	MinFill float64
	// MaxWait: a NodeClaim with a pod created this long before Now
	// launches however full it is, so that no pod waits on later ones for
	// longer than a batch may last.
	MaxWait time.Duration
	Now     time.Time
}

// Launchable splits the new NodeClaims of a pass made while pods keep
// coming into those it launches and those it holds back for a later pass.
// It launches a NodeClaim that is full: its pods (and DaemonSets) fill at
// least MinFill of the type the solver sized it for (solver.NewClaim.Fill),
// and that type was not chosen small because few pods of its kind were
// left (NewClaim.Short). It holds the others, a pass's last, part-filled
// NodeClaims, unless one of their pods has waited MaxWait: the solver
// launches each as the cheapest type that holds its pods, and the pods
// that come a second later would have filled a larger node with them. Both
// lists keep the plan's order.
func Launchable(claims []*solver.NewClaim, h Hold) (launch, held []*solver.NewClaim) {
	for _, c := range claims {
		if full(c, h.MinFill) || waited(c, h.Now.Add(-h.MaxWait)) {
			launch = append(launch, c)
		} else {
			held = append(held, c)
		}
	}
	return launch, held
}

func full(c *solver.NewClaim, minFill float64) bool { return !c.Short && c.Fill() >= minFill }

// waited reports whether a pod of c was created at or before since.
func waited(c *solver.NewClaim, since time.Time) bool {
	for _, p := range c.Pods {
		if !p.CreationTimestamp.Time.After(since) {
			return true
		}
	}
	return false
}

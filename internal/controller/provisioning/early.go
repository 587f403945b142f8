package provisioning

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

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
	// MaxWait: a NodeClaim with a pod held back this long before Now
	// launches however full it is, so that no pod waits on later ones for
	// longer than a batch may last.
	MaxWait time.Duration
	Now     time.Time
	// Since is when each pod was first held back (HeldSince of the last
	// pass); a pod not in it was not.
	Since map[types.UID]time.Time
}

// Launchable splits the new NodeClaims of a pass made while pods keep
// coming into those it launches and those it holds back for a later pass.
// It launches a NodeClaim that is full: its pods (and DaemonSets) fill at
// least MinFill of the type the solver sized it for (solver.NewClaim.Fill),
// and that type was not chosen small because few pods of its kind were
// left (NewClaim.Short). It holds the others, a pass's last, part-filled
// NodeClaims, unless one of their pods has been held back for MaxWait
// (a pod kube-scheduler displaced from its planned node may be minutes
// old; its wait for a node starts when it is first held): the solver
// launches each as the cheapest type that holds its pods, and the pods
// that come a second later would have filled a larger node with them. Both
// lists keep the plan's order; waitedOut counts the part-filled NodeClaims
// launched for a pod held back MaxWait.
func Launchable(claims []*solver.NewClaim, h Hold) (launch, held []*solver.NewClaim, waitedOut int) {
	for _, c := range claims {
		switch {
		case full(c, h.MinFill):
			launch = append(launch, c)
		case waited(c, h.Since, h.Now.Add(-h.MaxWait)):
			launch = append(launch, c)
			waitedOut++
		default:
			held = append(held, c)
		}
	}
	return launch, held, waitedOut
}

func full(c *solver.NewClaim, minFill float64) bool { return !c.Short && c.Fill() >= minFill }

// waited reports whether a pod of c was first held at or before limit.
func waited(c *solver.NewClaim, since map[types.UID]time.Time, limit time.Time) bool {
	for _, p := range c.Pods {
		if t, ok := since[p.UID]; ok && !t.After(limit) {
			return true
		}
	}
	return false
}

// HeldSince is when each pod of the held NodeClaims was first held back:
// as in since, or now. Pods no longer held are dropped.
func HeldSince(since map[types.UID]time.Time, held []*solver.NewClaim, now time.Time) map[types.UID]time.Time {
	out := map[types.UID]time.Time{}
	for _, c := range held {
		for _, p := range c.Pods {
			t, ok := since[p.UID]
			if !ok {
				t = now
			}
			out[p.UID] = t
		}
	}
	return out
}

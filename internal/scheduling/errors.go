package scheduling

import "strconv"

// IncompatibleError says which label key rules out a node and why.
//
// From Requirements.Compatible, A and B are the two sides' requirements for
// Key, in the order r.Compatible(o) received them. From Requirements.Matches,
// A is the requirement and B stands for the node's label: In [value], or
// DoesNotExist when the node lacks it. Callers that know what the sides are
// (a pod, a node pool) can build their own wording from the fields.
type IncompatibleError struct {
	Key  string
	A, B *Requirement

	// node marks an error from Matches, where B is a label, not a requirement.
	node bool
}

// Error reads, from Compatible:
//
//	key "topology.kubernetes.io/zone": In [us-east-1a] and In [us-east-1b us-east-1c] cannot both be met
//
// and from Matches:
//
//	key "topology.kubernetes.io/zone": node label is "us-east-1b", required In [us-east-1a]
//	key "topology.kubernetes.io/zone": node label is absent, required In [us-east-1a]
func (e *IncompatibleError) Error() string {
	prefix := "key " + strconv.Quote(e.Key) + ": "
	if !e.node {
		return prefix + e.A.describe() + " and " + e.B.describe() + " cannot both be met"
	}
	label := "absent"
	if len(e.B.values) == 1 {
		label = strconv.Quote(e.B.values[0])
	}
	return prefix + "node label is " + label + ", required " + e.A.describe()
}

package protect

import "time"

// Kind is what a Reason is about.
type Kind string

const (
	// KindDoNotDisrupt: karpenter.sh/do-not-disrupt on a pod, the node or its
	// NodeClaim holds the node.
	KindDoNotDisrupt Kind = "DoNotDisrupt"
	// KindPDB: a PodDisruptionBudget lets no pod it covers be evicted now.
	KindPDB Kind = "PDB"
	// KindMultiplePDBs: a pod is covered by more than one PDB, which the
	// Eviction API refuses outright.
	KindMultiplePDBs Kind = "MultiplePDBs"
	// KindPDBTogether: draining several nodes at once would evict more pods
	// of a PDB than it allows now; one at a time might pass.
	KindPDBTogether Kind = "PDBTogether"
	// KindInvalidDoNotDisrupt is a warning: a do-not-disrupt value that
	// means nothing and is ignored.
	KindInvalidDoNotDisrupt Kind = "InvalidDoNotDisrupt"
)

// Reason is one thing that holds a node, or a warning about one, in words a
// person can read.
type Reason struct {
	Kind Kind
	// Node is the node (or, before it registers, the NodeClaim) concerned.
	Node string
	// Pod is the pod concerned, as namespace/name.
	Pod string
	// PDB is the PodDisruptionBudget concerned, as namespace/name; several
	// are separated by ", ".
	PDB string
	// Until is when the reason lapses by itself; zero when it does not.
	Until   time.Time
	Message string
}

func (r Reason) String() string { return r.Message }

// Verdict is what holds a node, or a group of nodes, from disruption now.
type Verdict struct {
	Blockers []Reason
	// Warnings are things that do not block but that a person should fix.
	Warnings []Reason
}

// Blocked reports whether anything holds the node.
func (v Verdict) Blocked() bool { return len(v.Blockers) > 0 }

// Until is when every blocker will have lapsed by itself, and whether they
// all do; the caller may look again then.
func (v Verdict) Until() (time.Time, bool) {
	var last time.Time
	for _, r := range v.Blockers {
		if r.Until.IsZero() {
			return time.Time{}, false
		}
		if r.Until.After(last) {
			last = r.Until
		}
	}
	return last, true
}

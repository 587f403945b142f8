// Package explain answers `nodewright explain`: why a pod fits or does not
// fit each NodePool and instance type, with the allocatable arithmetic, and
// what the solver would do for it; and why a node is or is not being
// disrupted (budgets, do-not-disrupt pods, PDBs, consolidateAfter, drift,
// expiry, drain by attrition).
//
// The core (Pod, Node) is pure: a snapshot of the cluster and the
// instance types of each NodePool in, a structured Explanation out, which
// WriteText renders for people. It adds no decisions of its own: it asks
// the solver and the disruption planner, the same code the controller runs,
// so what it says is what the controller would do. Gather and Resolve are
// the thin shell that reads a live cluster or a set of manifests into that
// snapshot.
package explain

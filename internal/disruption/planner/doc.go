// Package planner decides what the next disruption loop does: which nodes
// expire, which drifted ones are replaced, which empty ones go, which
// under-used ones are consolidated (deleted, or replaced by one cheaper
// node, alone or several at once), and which are left to drain by attrition.
// It is pure: a snapshot of the cluster and a clock in, a Plan out. The Plan
// also says, for every node it leaves alone, what holds it (a budget, a
// do-not-disrupt pod, a PDB, consolidateAfter still running), which is what
// the preview condition, events and `nodewright explain node` show.
//
// Order follows Karpenter's: expiration (forceful, outside budgets), drift,
// emptiness, multi-node consolidation, single-node consolidation. Moving
// pods is simulated with the same solver the provisioner uses.
package planner

// Package scheduling is the label requirement algebra of the scheduling
// simulation: it turns pod node selectors, node affinity terms, node pool and
// instance type requirements and node labels into sets of allowed values per
// label key, and answers the questions the simulation asks of them — do two
// sets of requirements have a node in common (Compatible), does a node with
// these labels satisfy them (Matches), what is left when both must hold
// (Intersect), and which labels and NodeClaim requirements follow from the
// result. A Requirement is immutable once built, so Requirements can share
// them freely and copies stay cheap; every list it hands out is sorted so
// that simulations, logs and written objects are deterministic.
package scheduling

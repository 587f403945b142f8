// Package solver is nodewright's scheduling simulation: given a snapshot of the
// cluster (NodePools and their instance types, existing nodes and in-flight
// NodeClaims with their pods, DaemonSets, volumes) and the pods that are
// pending, it decides where each pod goes: onto an existing or in-flight node,
// onto a new NodeClaim it plans (with instance types ordered by price), or
// nowhere, with a reason a person can read.
//
// It is a pure function of its Input: no API client, no clock, no randomness;
// the same input gives the same Plan. Its filters follow kube-scheduler's, so
// that what it plans, kube-scheduler then binds. The provisioner, the
// disruption planner, the simulator and `explain` all call it.
package solver

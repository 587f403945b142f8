// Package simulate answers "what would nodewright do with this cluster?"
// without a cluster. An Engine drives the controller's own core, the
// solver through snapshot.Build and the disruption planner through
// planner.Decide, over objects read by package manifests, on a virtual
// clock: pending pods are batched and planned, NodeClaims launch from the
// kwok provider's catalog and register after a modelled delay, pods are
// bound as kube-scheduler's default profile would bind them (package
// kubescheduler), and disruption
// commands are carried out as the controller does. A Timeline scales
// workloads, starts jobs and changes NodePools and images along the way.
// Nothing waits on the wall clock, so a day runs in seconds and the same
// input always gives the same output.
package simulate

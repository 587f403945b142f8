// Package snapshot turns what the controller observed of the cluster (pods,
// nodes, NodeClaims, NodePools, DaemonSets, storage) into the solver's Input.
// It is pure: the same objects always give the same Input, so the controller,
// the simulator and tests all see the cluster the same way.
//
// Its main job is to count in-flight capacity correctly. A NodeClaim whose
// node has not registered, or registered but is not yet initialized, is an
// in-flight node: the pods nominated to it stay on it, and its startup taints,
// the taints its node showed at registration, and the well-known ephemeral
// taints do not keep pods away. That is what stops a second node being
// launched for the same pods while the first one starts.
package snapshot

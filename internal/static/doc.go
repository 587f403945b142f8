// Package static decides for static NodePools, those with spec.replicas set:
// how many NodeClaims to launch, which to remove when the count is lowered,
// and the shape of the NodeClaim they launch. Such a pool keeps its count
// whatever the pods need; the provisioner never plans pending pods onto new
// nodes of it, and consolidation never takes its nodes (drift and
// expiration still replace them).
//
// The functions here are pure; internal/controller/static reads the cluster
// and carries the decisions out.
package static

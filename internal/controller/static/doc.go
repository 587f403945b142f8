// Package static keeps static NodePools (spec.replicas set) at their
// count: it launches the missing NodeClaims and, when the count is lowered
// (kubectl scale nodepool), removes the emptiest. The decisions are
// internal/static's; this controller observes and acts.
package static

// Package disruption is the disruption controller: every loop it observes
// the cluster, asks the planner (internal/disruption/planner, pure) what to
// disrupt, and acts. It deletes expired, empty and consolidated nodes,
// launches replacements for drifted and consolidated ones and deletes those
// only once the replacements are initialized, taints nodes draining by
// attrition, and publishes what it decided and what holds the rest:
// NodeClaim conditions and events, the NodePool's DisruptionBudgets
// condition, and metrics. The drain itself belongs to the termination
// controller. Every choice is written to the NodeClaims it concerns before
// anything is launched, so a restart resumes rather than repeats.
package disruption

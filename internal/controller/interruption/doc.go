// Package interruption reads EC2's interruption events from an SQS queue
// (spot interruption warnings, rebalance recommendations, AWS Health
// scheduled changes, instance state changes, routed there by EventBridge
// rules as Karpenter's are) and replaces the NodeClaims of the instances
// about to go, before they go.
package interruption

// Package interruption replaces the NodeClaims of instances about to go,
// before they go. Events come from a cloudprovider.InterruptionSource: on
// AWS, EC2's events on an SQS queue (spot interruption warnings, rebalance
// recommendations, AWS Health scheduled changes, instance state changes,
// routed there by EventBridge rules as Karpenter's are); with kwok, the
// interruptions its fault injection issues, so that this path is rehearsed
// without a cloud.
package interruption

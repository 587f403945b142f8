// Package kwok is nodewright's cloud provider for clusters whose nodes kwok
// simulates: it "launches" an instance by creating a Node object that kwok
// animates, and injects the faults of real clouds and nodes (launch errors,
// insufficient capacity, slow registration, NotReady flaps, agent taints) as
// each KWOKNodeClass asks; the interruptions (spot interruption, scheduled
// maintenance, rebalance recommendation) a Node's annotation asks for,
// delivered to the interruption controller through the same
// cloudprovider.InterruptionSource interface as AWS's queue; and a node
// unhealthy for good, for node repair, whose repair policies it declares
// with a toleration a test may shorten.
//
// The provider keeps no state that correctness depends on: an instance is its
// Node, or, while its registration is delayed, its NodeClaim, and every timer
// runs from timestamps stored on those objects. A controller killed at any
// moment and restarted carries on where it stopped. Only the insufficient
// capacity cache and the launch-error counter live in memory; losing them
// merely repeats a fault.
//
// catalog.go and builtin.go hold the instance-type catalog: a built-in one of
// familiar families and sizes, or one read from a JSON file.
package kwok

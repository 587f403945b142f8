// Package termination drains the node of a NodeClaim that is being deleted,
// with Karpenter v1's semantics: the node is tainted
// karpenter.sh/disrupted:NoSchedule, its pods are evicted through the
// Eviction API in four waves (workload pods, DaemonSet pods, then the
// critical ones of each), pods with karpenter.sh/do-not-disrupt are waited
// for, the claim's terminationGracePeriod deletes what is left in time to be
// gone by its deadline, and the node's VolumeAttachments are waited for
// before the instance may go.
//
// Decisions are a pure function of a snapshot (Decide, in plan.go); the
// controller only observes, acts and records its progress in the claim's
// Drained and VolumesDetached conditions, from which the NodeClaim lifecycle
// controller (package nodeclaim) learns that the instance may be deleted.
package termination

// Package kubescheduler decides where kube-scheduler's default profile
// would bind a pod, so that the simulator places pods as a real cluster
// does rather than where the solver packed them. It is a pure model over a
// Snapshot of nodes and their pods: Schedule runs the default profile's
// filters (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity,
// NodePorts, NodeResourcesFit, VolumeBinding, VolumeZone,
// PodTopologySpread, InterPodAffinity) and
// scores (NodeResourcesFit with LeastAllocated, BalancedAllocation,
// TaintToleration, NodeAffinity, PodTopologySpread, InterPodAffinity, with
// kube-scheduler v1.34's weights and normalization) and returns the node
// with the highest total, or none with kube-scheduler's reasons; Assume
// records a binding, as the scheduler's cache does.
//
// Where it differs from kube-scheduler, on purpose:
//   - every feasible node is scored; kube-scheduler scores a sample once
//     a cluster has more than 100 nodes (percentageOfNodesToScore), which
//     depends on its node tree order and a rotating start index;
//   - ties are broken by a hash of the pod's UID and the node's name, not
//     at random, so a run is repeatable but no node is favoured by its
//     name;
//   - ImageLocality is left out (the simulator has no images on nodes),
//     as are VolumeRestrictions, NodeVolumeLimits, DynamicResources,
//     preemption and scheduling gates; VolumeBinding checks bound
//     volumes' node affinity and, for claims waiting for their first
//     consumer, the StorageClass's allowed topologies, but does not look
//     for static volumes to bind nor bind any;
//   - a failure no node can mend (a missing claim) is counted against
//     every node, where kube-scheduler's message states it once;
//   - kube-scheduler's default topology spread constraints select the
//     pods of the pod's Services, ReplicaSets, StatefulSets and
//     ReplicationControllers; the caller says which through
//     Options.DefaultSpreadSelector.
package kubescheduler

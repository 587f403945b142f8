// Package protect says what keeps a node from being disrupted now: the
// karpenter.sh/do-not-disrupt annotation on its pods, on the node or on its
// NodeClaim, and PodDisruptionBudgets that would make the Eviction API refuse
// to evict one of its pods. It also does the arithmetic of a NodeClaim's
// terminationGracePeriod: when each pod must be deleted so the node is gone
// by its deadline.
//
// It is pure: the caller passes the objects and the time, and gets back
// reasons a person can read, each naming the pod, PDB and time involved.
//
// Which pods count follows Karpenter v1:
//
//   - do-not-disrupt counts on every active pod (not finished, not being
//     deleted), DaemonSet and mirror pods included, as Karpenter lets them
//     block too.
//   - PDBs count only for pods a drain would evict: active pods that are not
//     mirror pods, do not tolerate the karpenter.sh/disrupted:NoSchedule
//     taint (a drain leaves those on the node), and are not held by
//     do-not-disrupt. DaemonSet pods are evicted by Karpenter's drain, last,
//     so they count; most DaemonSets tolerate every taint and so do not.
//   - For those pods the Eviction API's own rules decide: a pending pod is
//     deleted without asking its PDB; a pod covered by more than one PDB is
//     refused; an unready pod passes when its PDB's
//     unhealthyPodEvictionPolicy is AlwaysAllow, or when the PDB is healthy
//     (currentHealthy >= desiredHealthy > 0); otherwise status.disruptionsAllowed
//     must be above 0 and the status must be of the PDB's current generation.
package protect

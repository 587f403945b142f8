package snapshot

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/solver"
)

// Cluster is what the controller observed, as lists of objects.
type Cluster struct {
	NodePools      []*karpv1.NodePool
	NodeClaims     []*karpv1.NodeClaim
	Nodes          []*corev1.Node
	Pods           []*corev1.Pod
	DaemonSets     []*appsv1.DaemonSet
	PVCs           []*corev1.PersistentVolumeClaim
	PVs            []*corev1.PersistentVolume
	StorageClasses []*storagev1.StorageClass
	Namespaces     []*corev1.Namespace
}

// Options tune how the snapshot is read.
type Options struct {
	Now time.Time
	// NominationGrace is how long pods nominated to a NodeClaim stay reserved
	// on it after its node initialized, giving kube-scheduler time to bind them.
	NominationGrace time.Duration
	// UntriedAfter also plans pods kube-scheduler has not tried this long
	// after their creation (see ProvisionableAt); 0 waits for the scheduler.
	UntriedAfter time.Duration
	// MoveDraining plans the pods a drain will evict from the nodes of
	// NodeClaims being deleted as if they were pending (see
	// Result.Draining), so that room is found or launched for them before
	// they are evicted.
	MoveDraining bool
	// ReleaseDisplaced plans again, before the grace ends, the nominated pods
	// an initialized node has no room left for after the pods bound to it
	// (see RoomFor).
	ReleaseDisplaced bool
	// Policies are the --min-values-policy and --preference-policy the
	// solve runs with.
	Policies solver.Policies
}

// PoolTypes gives, per NodePool name, the instance types it may launch with
// overlays and learned capacity applied. A NodePool missing from the map is
// not ready (its NodeClass is missing, say) and launches nothing.
type PoolTypes map[string][]*instancetype.InstanceType

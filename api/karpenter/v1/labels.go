package v1

import corev1 "k8s.io/api/core/v1"

// Well-known labels, annotations, taints and finalizers of the karpenter.sh API.
// nodewright writes and reads them exactly as Karpenter does.
const (
	NodePoolLabelKey        = Group + "/nodepool"
	CapacityTypeLabelKey    = Group + "/capacity-type"
	NodeInitializedLabelKey = Group + "/initialized"
	NodeRegisteredLabelKey  = Group + "/registered"

	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"

	DoNotDisruptAnnotationKey           = Group + "/do-not-disrupt"
	NodePoolHashAnnotationKey           = Group + "/nodepool-hash"
	NodePoolHashVersionAnnotationKey    = Group + "/nodepool-hash-version"
	NodeClaimTerminationTimestampKey    = Group + "/nodeclaim-termination-timestamp"
	NodeClaimMinValuesRelaxedAnnotation = Group + "/nodeclaim-min-values-relaxed"

	TerminationFinalizer = Group + "/termination"

	DisruptedTaintKey    = Group + "/disrupted"
	UnregisteredTaintKey = Group + "/unregistered"
)

var (
	// DisruptedNoScheduleTaint keeps new pods off a node that is being disrupted.
	DisruptedNoScheduleTaint = corev1.Taint{Key: DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}
	// UnregisteredNoExecuteTaint is set at launch and removed once nodewright has
	// synced the node's labels and taints, so no pod lands on a half-made node.
	UnregisteredNoExecuteTaint = corev1.Taint{Key: UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
)

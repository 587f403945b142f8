// Package v1alpha1 holds the kwok cloud provider's NodeClass, KWOKNodeClass, in
// group nodewright.dev: the provider-specific settings a NodePool's nodeClassRef
// points to when nodes are simulated by kwok.
//
// +kubebuilder:object:generate=true
// +groupName=nodewright.dev
package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Group is nodewright's own API group.
const Group = "nodewright.dev"

var (
	// SchemeGroupVersion is nodewright.dev/v1alpha1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1alpha1"}
	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&KWOKNodeClass{}, &KWOKNodeClassList{})
}

// KWOKNodeClass configures nodes that the kwok provider creates: which machine
// image they run (changing it drifts them) and which faults the provider
// injects to rehearse what real clouds and nodes do.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kwoknodeclasses,scope=Cluster,categories=nodewright,shortName=kwoknc
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Image",type="string",JSONPath=".spec.image"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type KWOKNodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec KWOKNodeClassSpec `json:"spec,omitempty"`
	// +optional
	Status KWOKNodeClassStatus `json:"status,omitempty"`
}

// KWOKNodeClassList is a list of KWOKNodeClasses.
//
// +kubebuilder:object:root=true
type KWOKNodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KWOKNodeClass `json:"items"`
}

// KWOKNodeClassSpec is the desired configuration of simulated nodes.
type KWOKNodeClassSpec struct {
	// Image is the machine image nodes of this class run. Nodes launched with
	// another image are drifted.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:default:="kwok-image-v1"
	// +optional
	Image string `json:"image,omitempty"`
	// Faults the provider injects for NodeClaims of this class. A field left
	// out takes the provider's default (set by command-line flags); a list
	// written as [] overrides a default list with none.
	// +optional
	Faults *KWOKFaults `json:"faults,omitempty"`
}

// DefaultImage is the image a KWOKNodeClass gets when spec.image is left out.
const DefaultImage = "kwok-image-v1"

// KWOKFaults are the faults the kwok provider injects, so that nodewright's
// handling of failed launches, short capacity, slow registration and flapping
// nodes can be rehearsed locally.
type KWOKFaults struct {
	// LaunchErrors makes the first N launches of this class fail with a
	// transient error. The count is kept by the controller process, so a
	// restart fails the next N launches again.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	LaunchErrors *int32 `json:"launchErrors,omitempty"`
	// LaunchErrorPercent makes this share (0-100) of Create calls for
	// NodeClaims of this class fail, drawn at random for every call,
	// retries included. ThrottledPercent and LostResponsePercent say how.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	LaunchErrorPercent *int32 `json:"launchErrorPercent,omitempty"`
	// DeleteErrorPercent makes this share (0-100) of Delete calls for
	// NodeClaims of this class fail, as LaunchErrorPercent does launches.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	DeleteErrorPercent *int32 `json:"deleteErrorPercent,omitempty"`
	// ThrottledPercent is the share (0-100) of the errors injected by
	// LaunchErrorPercent and DeleteErrorPercent that are throttling errors
	// (the request was refused for exceeding a rate limit and names a
	// retry-after), as clouds answer a burst of calls.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ThrottledPercent *int32 `json:"throttledPercent,omitempty"`
	// LostResponsePercent is the share (0-100) of the injected errors that
	// are not throttling whose call took effect before it failed, as when a
	// response is lost: the instance was launched, or its deletion begun,
	// yet the caller sees an error. The rest fail before doing anything. A
	// launch whose Node waits for a registration delay has nothing to lose
	// and fails before doing anything.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	LostResponsePercent *int32 `json:"lostResponsePercent,omitempty"`
	// InsufficientCapacity lists offerings that are out of capacity: a launch
	// that picks one of them fails over to the next cheapest offering, and the
	// offering is reported unavailable for three minutes.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	InsufficientCapacity []KWOKOfferingSelector `json:"insufficientCapacity,omitempty"`
	// RegistrationDelay is how long after launch the instance's Node appears.
	// Zero creates the Node during the launch itself.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	RegistrationDelay *metav1.Duration `json:"registrationDelay,omitempty"`
	// NotReady simulates a kubelet restart while the node initializes: the
	// node turns NotReady once, for a while, soon after it appears.
	// +optional
	NotReady *KWOKNotReadyFault `json:"notReady,omitempty"`
	// AgentTaints are taints that a simulated node agent (a CNI, a storage
	// driver) puts on the node when it appears and removes once it is ready.
	// +kubebuilder:validation:MaxItems=20
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +optional
	AgentTaints []KWOKAgentTaint `json:"agentTaints,omitempty"`
}

// KWOKOfferingSelector picks offerings; an empty field matches any value.
type KWOKOfferingSelector struct {
	// InstanceType is an instance type name such as m5.large.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	InstanceType string `json:"instanceType,omitempty"`
	// Zone is a zone such as zone-a.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Zone string `json:"zone,omitempty"`
	// CapacityType is on-demand, spot or reserved.
	// +kubebuilder:validation:Enum=on-demand;spot;reserved
	// +optional
	CapacityType string `json:"capacityType,omitempty"`
}

// KWOKNotReadyFault is a window in which a node reports NotReady.
type KWOKNotReadyFault struct {
	// After is how long after the Node appears the window opens.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +required
	After metav1.Duration `json:"after"`
	// For is how long the node stays NotReady.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +required
	For metav1.Duration `json:"for"`
}

// KWOKAgentTaint is a taint a simulated node agent holds for a while.
type KWOKAgentTaint struct {
	// Key of the taint, e.g. node.cilium.io/agent-not-ready.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +required
	Key string `json:"key"`
	// Value of the taint.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Value string `json:"value,omitempty"`
	// Effect of the taint.
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	// +required
	Effect corev1.TaintEffect `json:"effect"`
	// RemoveAfter is how long after the Node appears the agent removes the
	// taint. Left out, the agent never becomes ready and the taint stays.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	RemoveAfter *metav1.Duration `json:"removeAfter,omitempty"`
}

// KWOKNodeClassStatus is what the controller observed of a KWOKNodeClass.
type KWOKNodeClassStatus struct {
	// Conditions describe whether the class can be used.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

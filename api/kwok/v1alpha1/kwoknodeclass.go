// Package v1alpha1 holds the kwok cloud provider's NodeClass, KWOKNodeClass, in
// group nodewright.dev: the provider-specific settings a NodePool's nodeClassRef
// points to when nodes are simulated by kwok.
//
// +kubebuilder:object:generate=true
// +groupName=nodewright.dev
package v1alpha1

import (
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
// image they run (changing it drifts them).
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
}

// KWOKNodeClassStatus is what the controller observed of a KWOKNodeClass.
type KWOKNodeClassStatus struct {
	// Conditions describe whether the class can be used.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Package v1 holds the Go types of Karpenter's karpenter.sh/v1 API, NodePool and
// NodeClaim, field for field, so that manifests written for Karpenter work with
// nodewright unchanged. Validation that the API server enforces lives in the
// kubebuilder markers here and in hack/crdgen (for what markers cannot say).
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Group is the API group of NodePool and NodeClaim.
const Group = "karpenter.sh"

var (
	// SchemeGroupVersion is karpenter.sh/v1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1"}
	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&NodePool{}, &NodePoolList{}, &NodeClaim{}, &NodeClaimList{})
}

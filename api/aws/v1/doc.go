// Package v1 holds the Go types of the AWS provider's karpenter.k8s.aws/v1 API,
// EC2NodeClass, field for field as Karpenter's AWS provider (v1.14.1) defines
// it, so that EC2NodeClass manifests written for Karpenter are accepted and
// read the same way. Validation the API server enforces lives in the kubebuilder
// markers here and in hack/crdgen (for what markers cannot say). The package
// also has the few pure lookups a caller needs without a cloud: the AMI family
// a class resolves to, its alias, its root volume.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Group is the API group of EC2NodeClass.
const Group = "karpenter.k8s.aws"

var (
	// SchemeGroupVersion is karpenter.k8s.aws/v1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1"}
	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&EC2NodeClass{}, &EC2NodeClassList{})
}

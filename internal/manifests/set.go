package manifests

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
)

// Set is every object loaded, in the order read (files sorted by path).
type Set struct {
	NodePools      []*karpv1.NodePool
	NodeClaims     []*karpv1.NodeClaim
	NodeOverlays   []*karpv1alpha1.NodeOverlay
	NodeClasses    []*kwokv1alpha1.KWOKNodeClass
	EC2NodeClasses []*awsv1.EC2NodeClass
	Nodes          []*corev1.Node
	Pods           []*corev1.Pod
	Deployments    []*appsv1.Deployment
	StatefulSets   []*appsv1.StatefulSet
	ReplicaSets    []*appsv1.ReplicaSet
	Jobs           []*batchv1.Job
	DaemonSets     []*appsv1.DaemonSet
	PDBs           []*policyv1.PodDisruptionBudget
	PVs            []*corev1.PersistentVolume
	PVCs           []*corev1.PersistentVolumeClaim
	StorageClasses []*storagev1.StorageClass
	Namespaces     []*corev1.Namespace
	// Files are the files read, sorted.
	Files []string
}

// Problem is an object, or a part of a file, that could not be used.
type Problem struct {
	File string
	// Kind, Namespace and Name identify the object, when known.
	Kind, Namespace, Name string
	// Message says what is wrong and how to fix it.
	Message string
}

func (p Problem) String() string {
	obj := p.Kind
	if p.Name != "" {
		if p.Namespace != "" {
			obj += " " + p.Namespace + "/" + p.Name
		} else {
			obj += " " + p.Name
		}
	}
	if obj == "" {
		return fmt.Sprintf("%s: %s", p.File, p.Message)
	}
	return fmt.Sprintf("%s: %s: %s", p.File, obj, p.Message)
}

// NodePool returns the NodePool named name, or nil.
func (s *Set) NodePool(name string) *karpv1.NodePool {
	for _, np := range s.NodePools {
		if np.Name == name {
			return np
		}
	}
	return nil
}

// NodeClass returns the KWOKNodeClass named name, or nil.
func (s *Set) NodeClass(name string) *kwokv1alpha1.KWOKNodeClass {
	for _, nc := range s.NodeClasses {
		if nc.Name == name {
			return nc
		}
	}
	return nil
}

// EC2NodeClass returns the EC2NodeClass named name, or nil.
func (s *Set) EC2NodeClass(name string) *awsv1.EC2NodeClass {
	for _, nc := range s.EC2NodeClasses {
		if nc.Name == name {
			return nc
		}
	}
	return nil
}

// Objects counts the objects of the set by kind, for a summary line.
func (s *Set) Objects() map[string]int {
	return map[string]int{
		"NodePool": len(s.NodePools), "NodeClaim": len(s.NodeClaims), "NodeOverlay": len(s.NodeOverlays),
		"KWOKNodeClass": len(s.NodeClasses), "EC2NodeClass": len(s.EC2NodeClasses), "Node": len(s.Nodes), "Pod": len(s.Pods),
		"Deployment": len(s.Deployments), "StatefulSet": len(s.StatefulSets), "ReplicaSet": len(s.ReplicaSets),
		"Job": len(s.Jobs), "DaemonSet": len(s.DaemonSets), "PodDisruptionBudget": len(s.PDBs),
		"PersistentVolume": len(s.PVs), "PersistentVolumeClaim": len(s.PVCs), "StorageClass": len(s.StorageClasses),
		"Namespace": len(s.Namespaces),
	}
}

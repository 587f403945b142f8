package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/instancetype"
)

// ExistingNode is a node of a synthetic cluster.
type ExistingNode struct {
	Name   string
	Labels map[string]string
	Type   *instancetype.InstanceType
	Pods   []*corev1.Pod
}

// LargeCluster is nodes of the given instance type spread over the zones,
// holding bound pods of the diverse mix dealt round-robin, so that with at
// most as many anti-affinity pods as nodes no node holds two of them.
func LargeCluster(nodes, boundPods int, it *instancetype.InstanceType, seed int64) []ExistingNode {
	out := make([]ExistingNode, nodes)
	for i := range out {
		name := fmt.Sprintf("existing-%05d", i)
		zone := Zones[i%len(Zones)]
		out[i] = ExistingNode{
			Name: name,
			Type: it,
			Labels: map[string]string{
				corev1.LabelHostname:           name,
				corev1.LabelTopologyZone:       zone,
				corev1.LabelInstanceTypeStable: it.Name,
				corev1.LabelArchStable:         "amd64",
				corev1.LabelOSStable:           "linux",
				"karpenter.sh/capacity-type":   "on-demand",
				"karpenter.sh/nodepool":        "default",
			},
		}
	}
	for i, p := range DiversePods(boundPods, seed) {
		n := &out[i%nodes]
		bound := p.DeepCopy()
		bound.Name = "bound-" + p.Name
		bound.Spec.NodeName = n.Name
		n.Pods = append(n.Pods, bound)
	}
	return out
}

package disruption

import (
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// index finds a loop's objects by name; built once per loop.
type index struct {
	pools  map[string]*karpv1.NodePool
	claims map[string]*karpv1.NodeClaim
	nodes  map[string]*corev1.Node
}

func indexOf(c *snapshot.Cluster) index {
	x := index{pools: map[string]*karpv1.NodePool{}, claims: map[string]*karpv1.NodeClaim{}, nodes: map[string]*corev1.Node{}}
	for _, np := range c.NodePools {
		x.pools[np.Name] = np
	}
	for _, nc := range c.NodeClaims {
		x.claims[nc.Name] = nc
	}
	for _, n := range c.Nodes {
		x.nodes[n.Name] = n
	}
	return x
}

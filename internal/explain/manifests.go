package explain

import (
	"github.com/nodewright/nodewright/internal/manifests"
)

// FromManifests takes the objects of a manifest set as sources. Workloads
// were already expanded into pods by manifests.Load.
func FromManifests(set *manifests.Set) *Sources {
	s := &Sources{PDBs: set.PDBs, Overlays: set.NodeOverlays}
	c := &s.Cluster
	c.NodePools, c.NodeClaims, c.Nodes, c.Pods = set.NodePools, set.NodeClaims, set.Nodes, set.Pods
	c.DaemonSets, c.PVCs, c.PVs, c.StorageClasses, c.Namespaces = set.DaemonSets, set.PVCs, set.PVs, set.StorageClasses, set.Namespaces
	return s
}

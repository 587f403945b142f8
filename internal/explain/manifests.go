package explain

import (
	"context"
	"fmt"
	"strings"

	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
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

// Offline reads manifest files or directories and resolves them against a
// kwok catalog (nil is the built-in one). Objects that could not be used
// come back as problems; it fails only when no file could be read.
func Offline(ctx context.Context, paths []string, catalog *kwok.Catalog) (Input, []manifests.Problem, error) {
	set, problems := manifests.Load(paths...)
	if len(set.Files) == 0 {
		return Input{}, problems, fmt.Errorf("no manifests found in %s; give YAML or JSON files, or directories holding them", strings.Join(paths, ", "))
	}
	cp, err := NewCatalogProvider(catalog)
	if err != nil {
		return Input{}, problems, err
	}
	return Resolve(ctx, FromManifests(set), cp, nil, false), problems, nil
}

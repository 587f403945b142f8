package explain

import (
	"context"
	"fmt"
	"strings"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/catalog"
	"github.com/nodewright/nodewright/internal/cloudprovider/offline"
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

// Offline reads manifest files or directories and resolves each NodePool
// against the catalog its NodeClass launches from: KWOKNodeClasses the kwok
// catalog, EC2NodeClasses the AWS catalog shaped by the class (nil is the
// built-in one of each). Objects that could not be used come back as
// problems; it fails only when no file could be read.
func Offline(ctx context.Context, paths []string, kwokCat, awsCat *catalog.Catalog) (Input, []manifests.Problem, error) {
	set, problems := manifests.Load(paths...)
	if len(set.Files) == 0 {
		return Input{}, problems, fmt.Errorf("no manifests found in %s; give YAML or JSON files, or directories holding them", strings.Join(paths, ", "))
	}
	kwokClasses := map[string]*kwokv1alpha1.KWOKNodeClass{}
	for _, c := range set.NodeClasses {
		kwokClasses[c.Name] = c
	}
	ec2Classes := map[string]*awsv1.EC2NodeClass{}
	for _, c := range set.EC2NodeClasses {
		ec2Classes[c.Name] = c
	}
	cp, err := offline.New(offline.Options{KWOKCatalog: kwokCat, AWSCatalog: awsCat,
		KWOKClasses: kwokClasses, EC2Classes: ec2Classes, AnyClass: true})
	if err != nil {
		return Input{}, problems, err
	}
	in := Resolve(ctx, FromManifests(set), cp, nil, false)
	in.AWSRegion = cp.AWSRegion()
	return in, problems, nil
}

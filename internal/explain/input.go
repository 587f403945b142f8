package explain

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/internal/observe"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// Sources are the objects an explanation reads, from a live cluster or from
// manifests.
type Sources = observe.Objects

// Input is everything the core looks at.
type Input struct {
	Cluster *snapshot.Cluster
	PDBs    []*policyv1.PodDisruptionBudget
	// PoolTypes are each NodePool's instance types, overlays applied, as
	// provisioning.ResolveTypes gives them.
	PoolTypes snapshot.PoolTypes
	// PoolErrors say why NodePools have no instance types.
	PoolErrors map[string]error
	// OverlayErrors name NodeOverlays that were skipped, and why.
	OverlayErrors map[string]error
	// AWSRegion is the AWS region EC2NodeClasses launch from and why, when
	// Offline chose it from their subnets' zones ("us-west-2 (from
	// EC2NodeClass default's subnets)"); "" otherwise. The caller says it,
	// since the user did not.
	AWSRegion string
	// CloudDrift is the provider's drift reason per NodeClaim name.
	CloudDrift map[string]string
	Now        time.Time
}

// withUIDs returns the cluster with a UID on every pod that lacks one.
// Manifests written by hand have none, and the snapshot tells pods apart by
// UID; the UID is derived from the pod's name so explanations are stable.
func withUIDs(c *snapshot.Cluster) *snapshot.Cluster {
	missing := false
	for _, p := range c.Pods {
		missing = missing || p.UID == ""
	}
	if !missing {
		return c
	}
	out := *c
	out.Pods = make([]*corev1.Pod, len(c.Pods))
	for i, p := range c.Pods {
		if p.UID == "" {
			cp := p.DeepCopy()
			sum := sha256.Sum256([]byte(p.Namespace + "/" + p.Name))
			cp.UID = types.UID("explain-" + hex.EncodeToString(sum[:8]))
			p = cp
		}
		out.Pods[i] = p
	}
	return &out
}

package drift

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// HashVersion names the algorithm behind Hash; it is stamped on NodeClaims
// as karpenter.sh/nodepool-hash-version. Hashes of different versions are
// never compared, so changing what Hash covers or how it encodes it must
// come with a new version, or every node would be replaced at once.
//
// It is deliberately not one of Karpenter's versions ("v1" to "v3"): a
// NodeClaim that Karpenter launched carries Karpenter's hashstructure value,
// which ours can never equal, and must not be read as drifted.
const HashVersion = "nodewright-v1"

// Hash returns the hash of the parts of np's template that a NodeClaim
// cannot follow once launched: template labels and annotations, taints,
// startup taints, nodeClassRef, expireAfter and terminationGracePeriod.
// Requirements are left out (Drifted checks them against the claim's labels
// instead, so that narrowing a requirement the node still meets replaces
// nothing), and so is everything outside the template (weight, limits,
// disruption, replicas). Taints are compared as sets, as Karpenter does.
// The result is an FNV-64a sum, in decimal, over a canonical JSON encoding,
// so it is the same in every process and Go version.
func Hash(np *karpv1.NodePool) string {
	h := fnv.New64a()
	_, _ = h.Write(canonicalTemplate(&np.Spec.Template))
	return strconv.FormatUint(h.Sum64(), 10)
}

// Stamp records on claim the hash of the NodePool it is made from, so that
// a later change to the template can be recognised as drift.
func Stamp(claim *karpv1.NodeClaim, np *karpv1.NodePool) {
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[karpv1.NodePoolHashAnnotationKey] = Hash(np)
	claim.Annotations[karpv1.NodePoolHashVersionAnnotationKey] = HashVersion
}

// NeedsRestamp reports whether the caller should Stamp claim again with its
// NodePool's current hash: its hash was made by another version of the
// algorithm (or by Karpenter, or is missing), so it cannot be compared. A
// claim already marked Drifted keeps its old stamp, and so its condition,
// as Karpenter does, so an upgrade cannot cancel a replacement under way.
// Restamping accepts the template as it is now: a template change made
// between launch and the restamp goes unnoticed by the hash.
func NeedsRestamp(claim *karpv1.NodeClaim) bool {
	if claim.Annotations[karpv1.NodePoolHashVersionAnnotationKey] == HashVersion {
		return false
	}
	return !meta.IsStatusConditionTrue(claim.Status.Conditions, karpv1.ConditionTypeDrifted)
}

// hashedTemplate is what Hash covers, spelled out field by field so that a
// field added to the API types later does not silently change every hash.
// Durations are nanoseconds, so "720h" and "43200m" hash alike; nil means
// unset, and for expireAfter "Never".
type hashedTemplate struct {
	Labels                 map[string]string `json:"labels,omitempty"`
	Annotations            map[string]string `json:"annotations,omitempty"`
	Taints                 []hashedTaint     `json:"taints,omitempty"`
	StartupTaints          []hashedTaint     `json:"startupTaints,omitempty"`
	NodeClassRef           *hashedRef        `json:"nodeClassRef,omitempty"`
	ExpireAfter            *int64            `json:"expireAfter,omitempty"`
	TerminationGracePeriod *int64            `json:"terminationGracePeriod,omitempty"`
}

type hashedTaint struct {
	Key       string `json:"key"`
	Value     string `json:"value,omitempty"`
	Effect    string `json:"effect"`
	TimeAdded *int64 `json:"timeAdded,omitempty"` // Unix seconds
}

type hashedRef struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
}

// canonicalTemplate encodes t for hashing. encoding/json sorts map keys;
// taints are sorted here by their own encoding.
func canonicalTemplate(t *karpv1.NodeClaimTemplate) []byte {
	s := t.Spec
	h := hashedTemplate{
		Labels:        t.Labels,
		Annotations:   t.Annotations,
		Taints:        hashedTaints(s.Taints),
		StartupTaints: hashedTaints(s.StartupTaints),
	}
	if r := s.NodeClassRef; r != nil {
		h.NodeClassRef = &hashedRef{Group: r.Group, Kind: r.Kind, Name: r.Name}
	}
	if d := s.ExpireAfter.Duration; d != nil {
		h.ExpireAfter = ptr.To(int64(*d))
	}
	if d := s.TerminationGracePeriod; d != nil {
		h.TerminationGracePeriod = ptr.To(int64(d.Duration))
	}
	return mustJSON(h)
}

// hashedTaints encodes taints as a set: sorted, duplicates kept (unlike
// hashstructure's XOR of elements, which lets a pair of duplicates cancel).
func hashedTaints(taints []corev1.Taint) []hashedTaint {
	if len(taints) == 0 {
		return nil
	}
	out := make([]hashedTaint, len(taints))
	for i, t := range taints {
		out[i] = hashedTaint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)}
		if t.TimeAdded != nil {
			out[i].TimeAdded = ptr.To(t.TimeAdded.Unix())
		}
	}
	slices.SortFunc(out, func(a, b hashedTaint) int { return bytes.Compare(mustJSON(a), mustJSON(b)) })
	return out
}

// mustJSON encodes values made only of strings, integers, maps of strings
// and slices of those, which cannot fail.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("drift: encoding the template for its hash: " + err.Error())
	}
	return b
}

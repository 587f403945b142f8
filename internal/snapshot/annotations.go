package snapshot

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// NominatedPodsAnnotation on a NodeClaim lists the UIDs of the pods the
	// provisioner planned for it, space separated. It is written in the same
	// request that creates the NodeClaim, so a controller restarted at any
	// moment finds the nominations and does not launch for those pods again.
	NominatedPodsAnnotation = "nodewright.dev/nominated-pods"
	// RegistrationTaintsAnnotation on a NodeClaim records the taints its node
	// carried at registration that the NodePool did not declare (a CNI agent's
	// taint, say). Like startup taints, they must go before the node counts as
	// initialized, and they do not keep pods away from the in-flight node.
	RegistrationTaintsAnnotation = "nodewright.dev/registration-taints"
	// DisplacedPodsAnnotation on a NodeClaim lists, in the same format, the
	// nominated pods that were planned onto it again after kube-scheduler
	// filled the node first planned for them with other pods. The lifecycle
	// controller writes the claim's node into their status.nominatedNodeName
	// (nodeclaim.Options.NominateDisplaced), so that the scheduler keeps
	// their room there: left to its own choice it would give that room to
	// the next pod it tries, and the pod planned for it would need yet
	// another node.
	DisplacedPodsAnnotation = "nodewright.dev/displaced-pods"
)

// Nominations decodes a NominatedPodsAnnotation value.
func Nominations(value string) []types.UID {
	fields := strings.Fields(value)
	out := make([]types.UID, len(fields))
	for i, f := range fields {
		out[i] = types.UID(f)
	}
	return out
}

// EncodeNominations encodes pod UIDs, sorted and without duplicates, so that
// equal sets give equal strings.
func EncodeNominations(uids []types.UID) string {
	s := make([]string, len(uids))
	for i, u := range uids {
		s[i] = string(u)
	}
	slices.Sort(s)
	s = slices.Compact(s)
	return strings.Join(s, " ")
}

// EncodeTaints writes taints as key=value:effect, comma separated.
func EncodeTaints(taints []corev1.Taint) string {
	s := make([]string, len(taints))
	for i, t := range taints {
		s[i] = t.Key + "=" + t.Value + ":" + string(t.Effect)
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}

// DecodeTaints reads EncodeTaints's format, skipping malformed entries.
func DecodeTaints(value string) []corev1.Taint {
	var out []corev1.Taint
	for _, f := range strings.Split(value, ",") {
		kv, effect, ok := strings.Cut(f, ":")
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if k == "" {
			continue
		}
		out = append(out, corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)})
	}
	return out
}

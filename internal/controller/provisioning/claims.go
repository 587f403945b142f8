package provisioning

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/drift"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// NodeClaimFor writes the NodeClaim for one of the plan's new claims: the
// NodePool's template, the claim's narrowed requirements with the instance
// types it may launch as, the planned requests, the nominated pods, and the
// template's hash, against which drift is later judged.
func NodeClaimFor(np *karpv1.NodePool, c *solver.NewClaim) *karpv1.NodeClaim {
	reqs := c.Requirements.Copy()
	names := make([]string, len(c.InstanceTypes))
	for i, it := range c.InstanceTypes {
		names[i] = it.Name
	}
	if len(names) > 0 {
		reqs.Add(scheduling.NewRequirementWithMinValues(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn,
			reqs.Get(corev1.LabelInstanceTypeStable).MinValues(), names...))
	}
	labels := snapshot.PoolLabels(np)
	annotations := map[string]string{}
	for k, v := range np.Spec.Template.Annotations {
		annotations[k] = v
	}
	uids := make([]types.UID, len(c.Pods))
	for i, p := range c.Pods {
		uids[i] = p.UID
	}
	annotations[snapshot.NominatedPodsAnnotation] = snapshot.EncodeNominations(uids)
	if c.MinValuesRelaxed != nil {
		annotations[karpv1.NodeClaimMinValuesRelaxedAnnotation] = strconv.FormatBool(*c.MinValuesRelaxed)
	}

	tmpl := np.Spec.Template.Spec
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: np.Name + "-",
			Labels:       labels,
			Annotations:  annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         karpv1.SchemeGroupVersion.String(),
				Kind:               "NodePool",
				Name:               np.Name,
				UID:                np.UID,
				BlockOwnerDeletion: ptr(true),
			}},
			Finalizers: []string{karpv1.TerminationFinalizer},
		},
		Spec: karpv1.NodeClaimSpec{
			Taints:                 tmpl.Taints,
			StartupTaints:          tmpl.StartupTaints,
			Requirements:           withMinValues(reqs),
			Resources:              karpv1.ResourceRequirements{Requests: c.Requests},
			NodeClassRef:           tmpl.NodeClassRef,
			TerminationGracePeriod: tmpl.TerminationGracePeriod,
			ExpireAfter:            tmpl.ExpireAfter,
		},
	}
	drift.Stamp(nc, np)
	return nc
}

// withMinValues writes requirements as NodeClaim requirements, carrying each
// key's minValues on its first expression. Labels that are not requirements
// of the NodePool are still written, so the node's labels come out right.
func withMinValues(reqs scheduling.Requirements) []karpv1.NodeSelectorRequirementWithMinValues {
	exprs := reqs.NodeSelectorRequirements()
	out := make([]karpv1.NodeSelectorRequirementWithMinValues, 0, len(exprs))
	seen := map[string]bool{}
	for _, e := range exprs {
		if !claimable(e.Key) {
			continue
		}
		r := karpv1.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: e}
		if !seen[e.Key] {
			seen[e.Key] = true
			r.MinValues = reqs.Get(e.Key).MinValues()
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// claimable says whether a NodeClaim may carry a requirement on key. The
// CRD refuses kubernetes.io/hostname (a pod's hostname affinity names
// nodes, not machines to launch) and the karpenter.sh domain but for the
// capacity type and the NodePool; the solver has already honoured them.
func claimable(key string) bool {
	if key == corev1.LabelHostname {
		return false
	}
	if key == karpv1.CapacityTypeLabelKey || key == karpv1.NodePoolLabelKey {
		return true
	}
	domain, _, found := strings.Cut(key, "/")
	return !found || !strings.HasSuffix(domain, "karpenter.sh")
}

func ptr[T any](v T) *T { return &v }

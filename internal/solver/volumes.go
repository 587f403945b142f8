package solver

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// volumeIndex resolves a pod's PersistentVolumeClaims to node requirements:
// a bound volume's node affinity, or for a claim waiting for its first
// consumer, its StorageClass's allowed topologies.
type volumeIndex struct {
	pvcs map[string]*corev1.PersistentVolumeClaim
	pvs  map[string]*corev1.PersistentVolume
	scs  map[string]*storagev1.StorageClass
}

func newVolumeIndex(v Volumes) *volumeIndex {
	ix := &volumeIndex{pvcs: map[string]*corev1.PersistentVolumeClaim{}, pvs: map[string]*corev1.PersistentVolume{}, scs: map[string]*storagev1.StorageClass{}}
	for _, c := range v.PersistentVolumeClaims {
		ix.pvcs[c.Namespace+"/"+c.Name] = c
	}
	for _, p := range v.PersistentVolumes {
		ix.pvs[p.Name] = p
	}
	for _, sc := range v.StorageClasses {
		ix.scs[sc.Name] = sc
	}
	return ix
}

// requirements returns the pod's volume requirements, a key describing them
// (for grouping), and an error text when a volume keeps the pod from
// scheduling anywhere.
func (ix *volumeIndex) requirements(p *corev1.Pod) (scheduling.Requirements, string, string) {
	var reqs scheduling.Requirements
	var keys []string
	for _, v := range p.Spec.Volumes {
		claim := ""
		switch {
		case v.PersistentVolumeClaim != nil:
			claim = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			claim = p.Name + "-" + v.Name // the generic ephemeral volume's claim
		default:
			continue
		}
		pvc, ok := ix.pvcs[p.Namespace+"/"+claim]
		if !ok {
			if v.Ephemeral != nil {
				// Not created yet: it will follow its StorageClass like any claim.
				r, err := ix.classRequirements(v.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName)
				if err != "" {
					return nil, "", err
				}
				reqs = merge(reqs, r)
				keys = append(keys, r.String())
				continue
			}
			return nil, "", fmt.Sprintf("PersistentVolumeClaim %s/%s not found", p.Namespace, claim)
		}
		r, err := ix.claimRequirements(pvc)
		if err != "" {
			return nil, "", err
		}
		reqs = merge(reqs, r)
		keys = append(keys, r.String())
	}
	sort.Strings(keys)
	return reqs, strings.Join(keys, ";"), ""
}

func merge(a, b scheduling.Requirements) scheduling.Requirements {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return a.Intersect(b)
}

func (ix *volumeIndex) claimRequirements(pvc *corev1.PersistentVolumeClaim) (scheduling.Requirements, string) {
	if pvc.Spec.VolumeName != "" {
		pv, ok := ix.pvs[pvc.Spec.VolumeName]
		if !ok {
			return nil, fmt.Sprintf("PersistentVolume %s of claim %s/%s not found", pvc.Spec.VolumeName, pvc.Namespace, pvc.Name)
		}
		if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil || len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) == 0 {
			return nil, ""
		}
		// The first term: volumes of one zone have one.
		return scheduling.FromNodeSelectorRequirements(pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions...), ""
	}
	return ix.classRequirements(pvc.Spec.StorageClassName)
}

func (ix *volumeIndex) classRequirements(name *string) (scheduling.Requirements, string) {
	if name == nil || *name == "" {
		return nil, ""
	}
	sc, ok := ix.scs[*name]
	if !ok {
		return nil, fmt.Sprintf("StorageClass %s not found", *name)
	}
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		// Immediate binding: the volume is made first and the pod follows it;
		// until it is bound, kube-scheduler will not place the pod.
		return nil, fmt.Sprintf("waiting for StorageClass %s (Immediate binding) to bind the claim", sc.Name)
	}
	if len(sc.AllowedTopologies) == 0 {
		return nil, ""
	}
	var exprs []corev1.NodeSelectorRequirement
	for _, e := range sc.AllowedTopologies[0].MatchLabelExpressions {
		exprs = append(exprs, corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOpIn, Values: e.Values})
	}
	return scheduling.FromNodeSelectorRequirements(exprs...), ""
}

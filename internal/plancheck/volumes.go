package plancheck

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/nodewright/nodewright/internal/solver"
)

// volumeIndex finds the storage objects a pod's volumes refer to.
type volumeIndex struct {
	pvcs map[string]*corev1.PersistentVolumeClaim // by namespace/name
	pvs  map[string]*corev1.PersistentVolume
	scs  map[string]*storagev1.StorageClass
}

func newVolumeIndex(v solver.Volumes) *volumeIndex {
	ix := &volumeIndex{
		pvcs: map[string]*corev1.PersistentVolumeClaim{},
		pvs:  map[string]*corev1.PersistentVolume{},
		scs:  map[string]*storagev1.StorageClass{},
	}
	for _, c := range v.PersistentVolumeClaims {
		ix.pvcs[c.Namespace+"/"+c.Name] = c
	}
	for _, pv := range v.PersistentVolumes {
		ix.pvs[pv.Name] = pv
	}
	for _, sc := range v.StorageClasses {
		ix.scs[sc.Name] = sc
	}
	return ix
}

// checkVolumes follows kube-scheduler's VolumeBinding filter as far as
// topology goes: a bound claim's volume must be reachable from the node (its
// required node affinity matches), and an unbound claim waiting for its first
// consumer must be provisionable there (the node's labels fall in one of the
// class's allowedTopologies, when it lists any). A claim that is missing, or
// unbound with Immediate binding, keeps the pod off every node.
func (ck *checker) checkVolumes(p *corev1.Pod, n *node) {
	for _, v := range p.Spec.Volumes {
		var claimName string
		var template *corev1.PersistentVolumeClaimTemplate
		switch {
		case v.PersistentVolumeClaim != nil:
			claimName = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			// A generic ephemeral volume's claim is named <pod>-<volume>.
			claimName = p.Name + "-" + v.Name
			template = v.Ephemeral.VolumeClaimTemplate
		default:
			continue
		}
		pvc := ck.volumes.pvcs[p.Namespace+"/"+claimName]
		var className *string
		switch {
		case pvc != nil && pvc.Spec.VolumeName != "":
			ck.checkBoundVolume(p, n, pvc)
			continue
		case pvc != nil:
			className = pvc.Spec.StorageClassName
		case template != nil:
			// Not created yet; it will be, from the template.
			className = template.Spec.StorageClassName
		default:
			ck.report(p, n.name, "volume", fmt.Sprintf("volume %s: PersistentVolumeClaim %s/%s not found", v.Name, p.Namespace, claimName))
			continue
		}
		ck.checkUnboundClaim(p, n, v.Name, className)
	}
}

func (ck *checker) checkBoundVolume(p *corev1.Pod, n *node, pvc *corev1.PersistentVolumeClaim) {
	pv := ck.volumes.pvs[pvc.Spec.VolumeName]
	if pv == nil {
		ck.report(p, n.name, "volume", fmt.Sprintf("claim %s/%s is bound to PersistentVolume %s, which is not found", pvc.Namespace, pvc.Name, pvc.Spec.VolumeName))
		return
	}
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return
	}
	if ok, err := corev1helpers.MatchNodeSelectorTerms(n.obj, pv.Spec.NodeAffinity.Required); err != nil || !ok {
		ck.report(p, n.name, "volume", fmt.Sprintf("PersistentVolume %s (claim %s/%s) has node affinity %s, which the node (%s) does not match",
			pv.Name, pvc.Namespace, pvc.Name, nodeSelectorString(pv.Spec.NodeAffinity.Required), nodeLabelsFor(n, selectorKeys(pv.Spec.NodeAffinity.Required))))
	}
}

func (ck *checker) checkUnboundClaim(p *corev1.Pod, n *node, volume string, className *string) {
	if className == nil || *className == "" {
		// The default class, or static binding: neither says anything about
		// topology that the input records.
		return
	}
	sc := ck.volumes.scs[*className]
	if sc == nil {
		ck.report(p, n.name, "volume", fmt.Sprintf("volume %s: StorageClass %s not found", volume, *className))
		return
	}
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		ck.report(p, n.name, "volume", fmt.Sprintf("volume %s: claim is unbound and StorageClass %s binds Immediate, so kube-scheduler waits for the volume", volume, sc.Name))
		return
	}
	if len(sc.AllowedTopologies) == 0 {
		return
	}
	for _, term := range sc.AllowedTopologies {
		if topologyTermMatches(term, n.labels()) {
			return
		}
	}
	var keys []string
	for _, term := range sc.AllowedTopologies {
		for _, e := range term.MatchLabelExpressions {
			keys = append(keys, e.Key)
		}
	}
	ck.report(p, n.name, "volume", fmt.Sprintf("volume %s: StorageClass %s allows topologies %v, which the node (%s) is in none of",
		volume, sc.Name, sc.AllowedTopologies, nodeLabelsFor(n, keys)))
}

// topologyTermMatches: every expression's key must be a node label with one
// of the listed values.
func topologyTermMatches(term corev1.TopologySelectorTerm, labels map[string]string) bool {
	for _, e := range term.MatchLabelExpressions {
		v, ok := labels[e.Key]
		if !ok || !slices.Contains(e.Values, v) {
			return false
		}
	}
	return true
}

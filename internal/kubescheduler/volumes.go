package kubescheduler

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Reasons of the volume filters, worded as kube-scheduler's.
const (
	ReasonVolumeNodeAffinity = "node(s) had volume node affinity conflict"
	ReasonVolumeBind         = "node(s) didn't find available persistent volumes to bind"
	ReasonVolumeZone         = "node(s) had no available volume zone"
)

// volumes index the claims, volumes and classes pods' volumes refer to.
type volumes struct {
	pvcs map[string]*corev1.PersistentVolumeClaim
	pvs  map[string]*corev1.PersistentVolume
	scs  map[string]*storagev1.StorageClass
}

func newVolumes(o Options) volumes {
	v := volumes{pvcs: map[string]*corev1.PersistentVolumeClaim{}, pvs: map[string]*corev1.PersistentVolume{},
		scs: map[string]*storagev1.StorageClass{}}
	for _, c := range o.PVCs {
		v.pvcs[c.Namespace+"/"+c.Name] = c
	}
	for _, p := range o.PVs {
		v.pvs[p.Name] = p
	}
	for _, sc := range o.StorageClasses {
		v.scs[sc.Name] = sc
	}
	return v
}

// volumeFilter is what VolumeBinding and VolumeZone check on each node for
// a pod: bound volumes' node affinity and zone labels, and for claims
// waiting for their first consumer the StorageClass's allowed topologies.
// Unresolvable is set when no node can do (a claim missing, or unbound
// with Immediate binding).
type volumeFilter struct {
	unresolvable string
	affinity     []*nodeaffinity.NodeSelector
	zones        []labels.Set // a bound volume's zone and region labels
	topologies   [][]corev1.TopologySelectorTerm
}

func (c *cycle) preFilterVolumes() *volumeFilter {
	f := &volumeFilter{}
	has := false
	for _, vol := range c.pod.Spec.Volumes {
		name, class := "", (*string)(nil)
		switch {
		case vol.PersistentVolumeClaim != nil:
			name = vol.PersistentVolumeClaim.ClaimName
		case vol.Ephemeral != nil:
			name = c.pod.Name + "-" + vol.Name
			if t := vol.Ephemeral.VolumeClaimTemplate; t != nil {
				class = t.Spec.StorageClassName
			}
		default:
			continue
		}
		has = true
		pvc, ok := c.s.vols.pvcs[c.pod.Namespace+"/"+name]
		switch {
		case ok && pvc.Spec.VolumeName != "":
			f.addBound(c.s.vols.pvs[pvc.Spec.VolumeName])
			continue
		case ok:
			class = pvc.Spec.StorageClassName
		case vol.Ephemeral == nil:
			f.unresolvable = `persistentvolumeclaim "` + name + `" not found`
			return f
		}
		f.addUnbound(c.s.vols.scs, class)
		if f.unresolvable != "" {
			return f
		}
	}
	if !has {
		return nil
	}
	return f
}

func (f *volumeFilter) addBound(pv *corev1.PersistentVolume) {
	if pv == nil {
		f.unresolvable = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
		return
	}
	if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil {
		if sel, err := nodeaffinity.NewNodeSelector(a.Required); err == nil {
			f.affinity = append(f.affinity, sel)
		}
	}
	zone := labels.Set{}
	for _, k := range []string{corev1.LabelTopologyZone, corev1.LabelTopologyRegion, corev1.LabelFailureDomainBetaZone, corev1.LabelFailureDomainBetaRegion} {
		if v, ok := pv.Labels[k]; ok {
			zone[k] = v
		}
	}
	if len(zone) > 0 {
		f.zones = append(f.zones, zone)
	}
}

// addUnbound admits a claim waiting for its first consumer where its class
// may provision; one of Immediate binding waits for the volume first.
func (f *volumeFilter) addUnbound(scs map[string]*storagev1.StorageClass, class *string) {
	sc := (*storagev1.StorageClass)(nil)
	if class != nil {
		sc = scs[*class]
	}
	if sc == nil || sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		f.unresolvable = "pod has unbound immediate PersistentVolumeClaims"
		return
	}
	if len(sc.AllowedTopologies) > 0 {
		f.topologies = append(f.topologies, sc.AllowedTopologies)
	}
}

func (f *volumeFilter) filter(node *corev1.Node) string {
	if f.unresolvable != "" {
		return f.unresolvable
	}
	for _, a := range f.affinity {
		if !a.Match(node) {
			return ReasonVolumeNodeAffinity
		}
	}
	for _, t := range f.topologies {
		if !matchTopology(t, node.Labels) {
			return ReasonVolumeBind
		}
	}
	for _, z := range f.zones {
		for k, v := range z {
			// A volume may span zones, listed with "__" between them.
			if nv, ok := node.Labels[k]; !ok || !contains(strings.Split(v, "__"), nv) {
				return ReasonVolumeZone
			}
		}
	}
	return ""
}

// matchTopology reports whether node labels satisfy any of a
// StorageClass's allowed topology terms (each term's expressions all).
func matchTopology(terms []corev1.TopologySelectorTerm, nodeLabels map[string]string) bool {
	for _, t := range terms {
		ok := true
		for _, e := range t.MatchLabelExpressions {
			if v, has := nodeLabels[e.Key]; !has || !contains(e.Values, v) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

package protect

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PDBs are the cluster's PodDisruptionBudgets, ready to tell which cover a
// pod.
type PDBs struct {
	byNamespace map[string][]pdbEntry
	pods        map[string][]*corev1.Pod
}

type pdbEntry struct {
	pdb      *policyv1.PodDisruptionBudget
	selector labels.Selector
}

// IndexPDBs prepares pdbs and finds the pods each covers among pods: those
// of its namespace that its selector matches. An empty selector matches
// every pod of the namespace and a missing one none, as in the Eviction
// API. A PDB whose selector cannot be read covers nothing, as the Eviction
// API has it; the error names it.
func IndexPDBs(pdbs []*policyv1.PodDisruptionBudget, pods []*corev1.Pod) (*PDBs, error) {
	x := &PDBs{byNamespace: map[string][]pdbEntry{}, pods: map[string][]*corev1.Pod{}}
	var errs []error
	for _, pdb := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			errs = append(errs, fmt.Errorf("PodDisruptionBudget %s: spec.selector: %w", pdbName(pdb), err))
			continue
		}
		x.byNamespace[pdb.Namespace] = append(x.byNamespace[pdb.Namespace], pdbEntry{pdb: pdb, selector: sel})
	}
	for _, p := range pods {
		for _, pdb := range x.Covering(p) {
			x.pods[pdbName(pdb)] = append(x.pods[pdbName(pdb)], p)
		}
	}
	return x, errors.Join(errs...)
}

// Covering lists the PDBs that cover pod.
func (x *PDBs) Covering(p *corev1.Pod) []*policyv1.PodDisruptionBudget {
	if x == nil {
		return nil
	}
	var out []*policyv1.PodDisruptionBudget
	for _, e := range x.byNamespace[p.Namespace] {
		if e.selector.Matches(labels.Set(p.Labels)) {
			out = append(out, e.pdb)
		}
	}
	return out
}

// Pods lists the pods that the PDB named namespace/name covers.
func (x *PDBs) Pods(name string) []*corev1.Pod {
	if x == nil {
		return nil
	}
	return x.pods[name]
}

// evictionRefused says why the Eviction API would refuse to evict pod now,
// or nil if it would not. Only the PDB that would decide is returned, so
// that callers can add up evictions per PDB; budgeted is false when the
// eviction would not use up any of its disruptions.
func (x *PDBs) evictionRefused(p *corev1.Pod) (refusal *Reason, pdb *policyv1.PodDisruptionBudget, budgeted bool) {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodPending ||
		p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return nil, nil, false // deleted outright, without asking a PDB
	}
	covering := x.Covering(p)
	switch len(covering) {
	case 0:
		return nil, nil, false
	case 1:
	default:
		names := make([]string, len(covering))
		for i, c := range covering {
			names[i] = pdbName(c)
		}
		return &Reason{Kind: KindMultiplePDBs, Pod: podName(p), PDB: strings.Join(names, ", "),
			Message: fmt.Sprintf("pod %s is covered by %d PodDisruptionBudgets (%s); the Eviction API refuses to evict such a pod",
				podName(p), len(covering), strings.Join(names, ", "))}, nil, false
	}
	pdb = covering[0]
	if !ready(p) && unhealthyMayGo(pdb) {
		return nil, pdb, false
	}
	st := pdb.Status
	switch {
	case st.ObservedGeneration < pdb.Generation:
		return &Reason{Kind: KindPDB, Pod: podName(p), PDB: pdbName(pdb),
			Message: fmt.Sprintf("pod %s is covered by PodDisruptionBudget %s, whose status is of generation %d, not %d yet; the Eviction API waits for it",
				podName(p), pdbName(pdb), st.ObservedGeneration, pdb.Generation)}, pdb, true
	case st.DisruptionsAllowed <= 0:
		return &Reason{Kind: KindPDB, Pod: podName(p), PDB: pdbName(pdb),
			Message: fmt.Sprintf("pod %s is covered by PodDisruptionBudget %s, which allows no disruption now (%d of %d pods healthy, %d wanted)",
				podName(p), pdbName(pdb), st.CurrentHealthy, st.ExpectedPods, st.DesiredHealthy)}, pdb, true
	}
	return nil, pdb, true
}

// unhealthyMayGo reports whether the Eviction API evicts an unready pod the
// PDB covers without using up a disruption.
func unhealthyMayGo(pdb *policyv1.PodDisruptionBudget) bool {
	if pol := pdb.Spec.UnhealthyPodEvictionPolicy; pol != nil && *pol == policyv1.AlwaysAllow {
		return true
	}
	return pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
}

// allows is how many evictions the PDB lets through now.
func allows(pdb *policyv1.PodDisruptionBudget) int {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return 0
	}
	return max(int(pdb.Status.DisruptionsAllowed), 0)
}

func pdbName(pdb *policyv1.PodDisruptionBudget) string { return pdb.Namespace + "/" + pdb.Name }

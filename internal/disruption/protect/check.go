package protect

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// Candidate is a node that might be disrupted.
type Candidate struct {
	// Node is nil before the node registers.
	Node *corev1.Node
	// Claim is nil for a node that no NodeClaim manages.
	Claim *karpv1.NodeClaim
	// Pods are the pods bound to the node.
	Pods []*corev1.Pod
}

func (c Candidate) name() string {
	switch {
	case c.Node != nil:
		return c.Node.Name
	case c.Claim != nil:
		return c.Claim.Name
	}
	return ""
}

// Check says what holds one node from disruption at now: do-not-disrupt on
// the node, its NodeClaim or an active pod, and PDBs that would refuse to
// evict one of its evictable pods. A PDB that still allows some disruption
// does not block, though it may allow fewer than the node's pods: the drain
// then evicts them one at a time, as Karpenter's does.
func Check(c Candidate, pdbs *PDBs, now time.Time) Verdict {
	var v Verdict
	node := c.name()
	if c.Node != nil {
		v.add(objectDoNotDisrupt("node", c.Node.Name, node, c.Node.Annotations))
	}
	if c.Claim != nil {
		v.add(objectDoNotDisrupt("NodeClaim", c.Claim.Name, node, c.Claim.Annotations))
	}
	for _, p := range c.Pods {
		v.add(podDoNotDisrupt(p, node, now))
	}
	for _, p := range c.Pods {
		if !Evictable(p, now) {
			continue
		}
		if r, _, _ := pdbs.evictionRefused(p); r != nil {
			r.Node = node
			v.Blockers = append(v.Blockers, *r)
		}
	}
	return v
}

// CheckTogether is Check for nodes to be drained at the same time, as a
// multi-node consolidation would: each node's own verdict, and a blocker for
// every PDB that would have to let more of its pods go at once than its
// status.disruptionsAllowed.
func CheckTogether(cs []Candidate, pdbs *PDBs, now time.Time) Verdict {
	var v Verdict
	evictions := map[*policyv1.PodDisruptionBudget][]string{}
	var order []*policyv1.PodDisruptionBudget
	for _, c := range cs {
		one := Check(c, pdbs, now)
		v.Blockers = append(v.Blockers, one.Blockers...)
		v.Warnings = append(v.Warnings, one.Warnings...)
		for _, p := range c.Pods {
			if !Evictable(p, now) {
				continue
			}
			if _, pdb, budgeted := pdbs.evictionRefused(p); budgeted {
				if evictions[pdb] == nil {
					order = append(order, pdb)
				}
				evictions[pdb] = append(evictions[pdb], podName(p))
			}
		}
	}
	for _, pdb := range order {
		pods := evictions[pdb]
		if n := allows(pdb); len(pods) > n && n > 0 {
			v.Blockers = append(v.Blockers, Reason{Kind: KindPDBTogether, PDB: pdbName(pdb),
				Message: fmt.Sprintf("draining these %d nodes together would evict %d pods covered by PodDisruptionBudget %s (%v), which allows %d disruptions now",
					len(cs), len(pods), pdbName(pdb), pods, n)})
		}
	}
	return v
}

// podDoNotDisrupt reads a pod's do-not-disrupt annotation into a blocker, a
// warning, or nothing. Only active pods count, DaemonSet and mirror pods
// included, as in Karpenter.
func podDoNotDisrupt(p *corev1.Pod, node string, now time.Time) (blocker, warning *Reason) {
	if !Active(p) {
		return nil, nil
	}
	held, until, err := DoNotDisrupt(p, now)
	switch {
	case err != nil:
		return nil, &Reason{Kind: KindInvalidDoNotDisrupt, Node: node, Pod: podName(p), Message: err.Error()}
	case !held:
		return nil, nil
	case until.IsZero():
		return &Reason{Kind: KindDoNotDisrupt, Node: node, Pod: podName(p),
			Message: fmt.Sprintf("pod %s has %s: %q", podName(p), karpv1.DoNotDisruptAnnotationKey, p.Annotations[karpv1.DoNotDisruptAnnotationKey])}, nil
	default:
		return &Reason{Kind: KindDoNotDisrupt, Node: node, Pod: podName(p), Until: until,
			Message: fmt.Sprintf("pod %s has %s: %q, which holds until %s", podName(p), karpv1.DoNotDisruptAnnotationKey,
				p.Annotations[karpv1.DoNotDisruptAnnotationKey], until.UTC().Format(time.RFC3339))}, nil
	}
}

// objectDoNotDisrupt reads do-not-disrupt on a node or NodeClaim, where only
// "true" means anything, as in Karpenter.
func objectDoNotDisrupt(kind, name, node string, annotations map[string]string) (blocker, warning *Reason) {
	v, ok := annotations[karpv1.DoNotDisruptAnnotationKey]
	switch {
	case !ok:
		return nil, nil
	case v == "true":
		return &Reason{Kind: KindDoNotDisrupt, Node: node,
			Message: fmt.Sprintf("%s %s has %s: \"true\"", kind, name, karpv1.DoNotDisruptAnnotationKey)}, nil
	default:
		return nil, &Reason{Kind: KindInvalidDoNotDisrupt, Node: node,
			Message: fmt.Sprintf("%s %s: %s %q is ignored; on a %s only \"true\" means anything", kind, name, karpv1.DoNotDisruptAnnotationKey, v, kind)}
	}
}

func (v *Verdict) add(blocker, warning *Reason) {
	if blocker != nil {
		v.Blockers = append(v.Blockers, *blocker)
	}
	if warning != nil {
		v.Warnings = append(v.Warnings, *warning)
	}
}

package static

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// Is reports whether a NodePool is static.
func Is(np *karpv1.NodePool) bool { return np != nil && np.Spec.Replicas != nil }

// Input is what one decision for one static NodePool looks at.
type Input struct {
	NodePool *karpv1.NodePool
	// Claims are the NodePool's NodeClaims, deleting ones included.
	Claims []*karpv1.NodeClaim
	// Pods counts, per node name, the pods that would have to move if the
	// node went (not DaemonSet or mirror pods, not finished).
	Pods map[string]int
	// Replacing maps the NodeClaims disruption is replacing (drift) to the
	// names of their replacements, as recorded on them before the
	// replacements are created.
	Replacing map[string][]string
}

// Decision is what a static NodePool needs now.
type Decision struct {
	// Have is how many NodeClaims count towards replicas.
	Have int
	// Create is how many NodeClaims to launch.
	Create int
	// Delete are the NodeClaims to remove, emptiest first.
	Delete []string
	// Held says why fewer than the missing NodeClaims are launched ("" when
	// none are held back).
	Held string
}

// Decide compares a static NodePool's NodeClaims with its replicas.
//
// A NodeClaim being deleted does not count. One that disruption is
// replacing (drift) does not count either, but its replacements do, from
// the moment the choice is recorded on it: the replacement names are
// written before the replacements are created, so the count never dips or
// peaks while a replacement is in flight, and neither a second launch nor
// the removal of the fresh replacement can follow.
func Decide(in Input) Decision {
	np := in.NodePool
	if !Is(np) || np.DeletionTimestamp != nil {
		return Decision{}
	}
	want := int(*np.Spec.Replicas)
	live := map[string]*karpv1.NodeClaim{}
	disrupting := 0
	for _, nc := range in.Claims {
		if nc.DeletionTimestamp != nil {
			continue
		}
		live[nc.Name] = nc
		if _, ok := in.Replacing[nc.Name]; ok {
			disrupting++
		}
	}
	promised := map[string]bool{}
	for name, rs := range in.Replacing {
		if live[name] == nil {
			continue
		}
		for _, r := range rs {
			promised[r] = true
		}
	}
	d := Decision{Have: len(live) - disrupting}
	for r := range promised {
		if live[r] == nil {
			d.Have++
		}
	}
	switch {
	case d.Have < want:
		d.Create = want - d.Have
		if limit, ok := np.Spec.Limits["nodes"]; ok {
			// Every NodeClaim, the ones being replaced or deleted too, holds
			// a node until it is gone; launching past the limit would break it.
			room := int(limit.Value()) - len(in.Claims)
			for r := range promised {
				if live[r] == nil {
					room--
				}
			}
			if room < d.Create {
				d.Create = max(room, 0)
				d.Held = fmt.Sprintf("limits.nodes is %d and %d NodeClaims exist or are on their way; %d of %d replicas are missing",
					limit.Value(), int(limit.Value())-room, want-d.Have, want)
			}
		}
	case d.Have > want:
		var cands []*karpv1.NodeClaim
		for _, nc := range live {
			if _, replacing := in.Replacing[nc.Name]; !replacing && !promised[nc.Name] {
				cands = append(cands, nc)
			}
		}
		emptiestFirst(cands, in.Pods)
		for _, nc := range cands[:min(d.Have-want, len(cands))] {
			d.Delete = append(d.Delete, nc.Name)
		}
	}
	return d
}

// emptiestFirst orders the NodeClaims to remove: fewest pods to move first;
// among equals, one not yet initialized (it serves nothing yet), then the
// newest, then by name for a stable order.
func emptiestFirst(cs []*karpv1.NodeClaim, pods map[string]int) {
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		pa, pb := pods[a.Status.NodeName], pods[b.Status.NodeName]
		if a.Status.NodeName == "" {
			pa = 0
		}
		if b.Status.NodeName == "" {
			pb = 0
		}
		if pa != pb {
			return pa < pb
		}
		ia := meta.IsStatusConditionTrue(a.Status.Conditions, karpv1.ConditionTypeInitialized)
		ib := meta.IsStatusConditionTrue(b.Status.Conditions, karpv1.ConditionTypeInitialized)
		if ia != ib {
			return !ia
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.After(b.CreationTimestamp.Time)
		}
		return a.Name < b.Name
	})
}

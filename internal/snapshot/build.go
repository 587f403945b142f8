package snapshot

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/protect"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
)

// Result is a snapshot read for the solver.
type Result struct {
	Input *solver.Input
	// PoolErrors say why NodePools were left out of the solve.
	PoolErrors map[string]error
	// Static are the static NodePools (spec.replicas), left out of the
	// solve: they launch their replicas only.
	Static []string
	// ClaimOf maps the name of a solver Node to the NodeClaim behind it, for
	// nodes nodewright launched.
	ClaimOf map[string]string
	// Nominated counts pending pods kept on in-flight NodeClaims instead of
	// being planned again.
	Nominated int
	// Draining maps the pods moved off draining nodes (Options.MoveDraining)
	// to the node they are still bound to. Input.Pods holds copies of them
	// without a nodeName.
	Draining map[types.UID]string
	// Displaced are the pending pods planned again in this pass because the
	// pods bound to their initialized node left no room for them
	// (Options.ReleaseDisplaced).
	Displaced map[types.UID]bool
}

// Build reads a cluster snapshot into the solver's Input.
func Build(c *Cluster, poolTypes PoolTypes, opts Options) *Result {
	res := &Result{PoolErrors: map[string]error{}, ClaimOf: map[string]string{}, Draining: map[types.UID]string{}, Displaced: map[types.UID]bool{}}
	in := &solver.Input{
		DaemonSets: c.DaemonSets,
		Namespaces: c.Namespaces,
		Volumes: solver.Volumes{
			PersistentVolumeClaims: c.PVCs,
			PersistentVolumes:      c.PVs,
			StorageClasses:         c.StorageClasses,
		},
	}
	res.Input = in
	opts.Policies.Apply(in)

	nodeIndex := IndexNodes(c.Nodes)
	ours := NominatedNodes(c.NodeClaims, nodeIndex)
	pending := map[types.UID]*corev1.Pod{}
	boundTo := map[string][]*corev1.Pod{}
	for _, p := range c.Pods {
		switch {
		case Bound(p):
			boundTo[p.Spec.NodeName] = append(boundTo[p.Spec.NodeName], p)
		case ours.ProvisionableAt(p, opts.Now, opts.UntriedAfter):
			pending[p.UID] = p
		}
	}

	claimed := map[string]bool{}
	usage := map[string]corev1.ResourceList{}
	nominated := map[types.UID]bool{}
	var draining []*corev1.Pod
	for _, nc := range sortedClaims(c.NodeClaims) {
		node := nodeIndex.ClaimNode(nc)
		entry := claimEntry(nc, node, poolTypes)
		if node != nil {
			claimed[node.Name] = true
		}
		if nc.DeletionTimestamp == nil {
			holds := NominationsHold(nc, opts.Now, opts.NominationGrace)
			var held []*corev1.Pod
			for _, uid := range Nominations(nc.Annotations[NominatedPodsAnnotation]) {
				// A pod kube-scheduler has not tried yet stays nominated past
				// the grace: under a burst the scheduler is minutes behind,
				// and planning the pod again would launch a second node for it.
				if p, ok := pending[uid]; ok && !nominated[uid] && (holds || untried(p)) {
					held = append(held, p)
				}
			}
			if opts.ReleaseDisplaced && node != nil && !entry.InFlight {
				// Pods the bound ones leave no room for are planned again now,
				// not when the grace ends.
				var released []*corev1.Pod
				held, released = RoomFor(entry.Allocatable, boundTo[entry.Name], held)
				for _, p := range released {
					res.Displaced[p.UID] = true
				}
			}
			for _, p := range held {
				nominated[p.UID] = true
				entry.Pods = append(entry.Pods, p)
			}
		}
		if opts.MoveDraining && nc.DeletionTimestamp != nil && node != nil {
			stay, move := splitDraining(boundTo[entry.Name], opts.Now)
			entry.Pods = append(entry.Pods, stay...)
			for _, p := range move {
				res.Draining[p.UID] = node.Name
				cp := p.DeepCopy()
				cp.Spec.NodeName = ""
				draining = append(draining, cp)
			}
		} else {
			entry.Pods = append(entry.Pods, boundTo[entry.Name]...)
		}
		res.ClaimOf[entry.Name] = nc.Name
		in.Nodes = append(in.Nodes, entry)
		if pool := nc.Labels[karpv1.NodePoolLabelKey]; pool != "" {
			addUsage(usage, pool, ClaimCapacity(nc))
		}
	}
	res.Nominated = len(nominated)
	for uid := range res.Displaced {
		if nominated[uid] {
			delete(res.Displaced, uid) // still held by another claim
		}
	}

	for _, n := range c.Nodes {
		if claimed[n.Name] {
			continue
		}
		in.Nodes = append(in.Nodes, solver.Node{
			Name:        n.Name,
			NodePool:    n.Labels[karpv1.NodePoolLabelKey],
			Labels:      n.Labels,
			Taints:      n.Spec.Taints,
			Allocatable: n.Status.Allocatable,
			Pods:        boundTo[n.Name],
			Deleting:    n.DeletionTimestamp != nil || n.Spec.Unschedulable,
		})
	}

	// The drained pods come first: they were placed before the pods now
	// pending, and kube-scheduler will see them pending first.
	in.Pods = append(in.Pods, draining...)
	for _, p := range c.Pods {
		if pending[p.UID] != nil && !nominated[p.UID] {
			in.Pods = append(in.Pods, p)
		}
	}

	for _, np := range c.NodePools {
		if np.Spec.Replicas != nil {
			// A static NodePool launches its replicas and nothing else: no
			// plan opens a node of it for pods (its nodes still take pods).
			res.Static = append(res.Static, np.Name)
			continue
		}
		sp, err := solverPool(np, poolTypes, usage[np.Name])
		if err != nil {
			res.PoolErrors[np.Name] = err
			continue
		}
		in.NodePools = append(in.NodePools, sp)
	}
	return res
}

// splitDraining divides the pods of a draining node into those that stay
// until the node goes (DaemonSet and mirror pods, pods ending, pods that
// tolerate the disrupted taint or that do-not-disrupt holds) and those the
// drain will evict, which need a place elsewhere.
func splitDraining(pods []*corev1.Pod, now time.Time) (stay, move []*corev1.Pod) {
	for _, p := range pods {
		if IsDaemonSetPod(p) || !protect.Evictable(p, now) {
			stay = append(stay, p)
		} else {
			move = append(move, p)
		}
	}
	return stay, move
}

// sortedClaims orders claims by name so a pod nominated twice (it cannot be,
// but a hand edit could) lands on the same claim every time.
func sortedClaims(claims []*karpv1.NodeClaim) []*karpv1.NodeClaim {
	out := append([]*karpv1.NodeClaim(nil), claims...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// NodeIndex finds nodes by name and by provider ID.
type NodeIndex struct {
	ByName, ByProviderID map[string]*corev1.Node
}

// IndexNodes indexes nodes.
func IndexNodes(nodes []*corev1.Node) NodeIndex {
	x := NodeIndex{ByName: make(map[string]*corev1.Node, len(nodes)), ByProviderID: make(map[string]*corev1.Node, len(nodes))}
	for _, n := range nodes {
		x.ByName[n.Name] = n
		if n.Spec.ProviderID != "" {
			x.ByProviderID[n.Spec.ProviderID] = n
		}
	}
	return x
}

// ClaimNode finds the node that registered for a NodeClaim, if any.
func (x NodeIndex) ClaimNode(nc *karpv1.NodeClaim) *corev1.Node {
	if id := nc.Status.ProviderID; id != "" {
		if n := x.ByProviderID[id]; n != nil {
			return n
		}
	}
	if nc.Status.NodeName != "" {
		if n := x.ByName[nc.Status.NodeName]; n != nil && (nc.Status.ProviderID == "" || n.Spec.ProviderID == nc.Status.ProviderID) {
			return n
		}
	}
	return nil
}

// claimEntry is the solver's view of a NodeClaim and its node, if one
// registered.
func claimEntry(nc *karpv1.NodeClaim, node *corev1.Node, poolTypes PoolTypes) solver.Node {
	initialized := meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
	startup := append(append([]corev1.Taint(nil), nc.Spec.StartupTaints...), DecodeTaints(nc.Annotations[RegistrationTaintsAnnotation])...)
	e := solver.Node{
		NodePool:      nc.Labels[karpv1.NodePoolLabelKey],
		InFlight:      !initialized,
		StartupTaints: startup,
		Deleting:      nc.DeletionTimestamp != nil,
	}
	if node != nil {
		e.Name = node.Name
		e.Labels = node.Labels
		e.Taints = node.Spec.Taints
		e.Allocatable = node.Status.Allocatable
		e.Deleting = e.Deleting || node.DeletionTimestamp != nil
		if len(e.Allocatable) == 0 {
			e.Allocatable = ClaimAllocatable(nc, poolTypes)
		}
		return e
	}
	e.Name = nc.Name
	e.Labels = ClaimLabels(nc)
	e.Taints = nc.Spec.Taints
	e.Allocatable = ClaimAllocatable(nc, poolTypes)
	return e
}

// ClaimLabels are the labels a NodeClaim's node will have: its own labels,
// the single-valued requirements, and its name as hostname until a node
// brings its own.
func ClaimLabels(nc *karpv1.NodeClaim) map[string]string {
	reqs := scheduling.Requirements{}
	for _, r := range nc.Spec.Requirements {
		reqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	out := reqs.Labels()
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range nc.Labels {
		out[k] = v
	}
	if _, ok := out[corev1.LabelHostname]; !ok {
		out[corev1.LabelHostname] = nc.Name
	}
	return out
}

// ClaimAllocatable is what pods may use on a NodeClaim's machine: the
// provider's figure once launched. Before that, the instance type is not
// chosen yet, so it is the least that any type the claim allows offers, per
// resource; and when those types are unknown, exactly what was planned.
func ClaimAllocatable(nc *karpv1.NodeClaim, poolTypes PoolTypes) corev1.ResourceList {
	if len(nc.Status.Allocatable) > 0 {
		return nc.Status.Allocatable
	}
	var allowed []string
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable && r.Operator == corev1.NodeSelectorOpIn {
			allowed = r.Values
		}
	}
	var least corev1.ResourceList
	for _, name := range allowed {
		it := findType(poolTypes[nc.Labels[karpv1.NodePoolLabelKey]], name)
		if it == nil {
			return nc.Spec.Resources.Requests
		}
		alloc := it.Allocatable()
		if least == nil {
			least = alloc
			continue
		}
		for res, q := range least {
			if a, ok := alloc[res]; !ok {
				delete(least, res)
			} else if a.Cmp(q) < 0 {
				least[res] = a
			}
		}
	}
	if least == nil {
		return nc.Spec.Resources.Requests
	}
	return least
}

func findType(its []*instancetype.InstanceType, name string) *instancetype.InstanceType {
	for _, it := range its {
		if it.Name == name {
			return it
		}
	}
	return nil
}

// ClaimCapacity is what a NodeClaim counts against its NodePool's limits.
func ClaimCapacity(nc *karpv1.NodeClaim) corev1.ResourceList {
	if len(nc.Status.Capacity) > 0 {
		return nc.Status.Capacity
	}
	return nc.Spec.Resources.Requests
}

func addUsage(usage map[string]corev1.ResourceList, pool string, rl corev1.ResourceList) {
	u := usage[pool]
	if u == nil {
		u = corev1.ResourceList{}
		usage[pool] = u
	}
	for name, q := range rl {
		sum := u[name]
		sum.Add(q)
		u[name] = sum
	}
	nodes := u["nodes"]
	nodes.Add(resource.MustParse("1"))
	u["nodes"] = nodes
}

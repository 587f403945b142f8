package explain

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// PodExplanation is why a pod fits where it fits, and what the solver
// would do for it.
type PodExplanation struct {
	Pod      string // namespace/name
	Requests corev1.ResourceList
	// Status is where the pod is now, in words: "pending", "bound to node
	// x", "nominated to in-flight NodeClaim y".
	Status string
	// Hypothetical says the pod is not waiting for a node (it is bound, or
	// finished): it was judged as if it were pending now.
	Hypothetical bool
	Decision     Decision
	// Existing counts the reasons existing and in-flight nodes refuse the
	// pod; nodes that would take it are not listed.
	Existing  []solver.NodeCount
	NodePools []PoolFit
	// Notes are things that change the answer: skipped NodeOverlays, say.
	Notes []string
}

// DecisionKind is what the solver would do with a pod.
type DecisionKind string

const (
	// DecisionNone: nodewright does not provision for the pod (a
	// DaemonSet's pod, one of another scheduler).
	DecisionNone DecisionKind = "None"
	// DecisionExisting: the pod goes to an existing or in-flight node.
	DecisionExisting DecisionKind = "ExistingNode"
	// DecisionLaunch: the solver launches a new NodeClaim for the pod.
	DecisionLaunch DecisionKind = "Launch"
	// DecisionUnschedulable: nothing can hold the pod.
	DecisionUnschedulable DecisionKind = "Unschedulable"
	// DecisionNominated: the pod waits for an in-flight NodeClaim nodewright
	// launched for it; the solver plans it no further.
	DecisionNominated DecisionKind = "Nominated"
)

// Decision is what a solve of the whole cluster does with the pod.
type Decision struct {
	Kind DecisionKind
	// Node is the existing node, for DecisionExisting.
	Node string
	// NodeClaim is the in-flight NodeClaim the pod waits for, for
	// DecisionNominated.
	NodeClaim string
	// NodePool, InstanceTypes (cheapest first) and Price of the NodeClaim
	// to launch, with how many pods it would hold, for DecisionLaunch.
	NodePool      string
	InstanceTypes []TypeOption
	Price         float64
	Pods          int
	// Reason is the solver's summary, for DecisionUnschedulable.
	Reason string
}

// TypeOption is an instance type with the price the NodeClaim would pay.
type TypeOption struct {
	Name  string
	Price float64
}

// PoolFit is why one NodePool can or cannot launch a node for the pod.
type PoolFit struct {
	NodePool string
	// NotReady says why the NodePool launches nothing at all (no instance
	// types, being deleted).
	NotReady string
	// Reason is set when the whole pool is out for this pod (a taint, a
	// requirement, a limit).
	Reason string
	Types  []TypeFit
}

// TypeFit is one instance type of a pool, judged for the pod.
type TypeFit struct {
	solver.TypeReason
	// Price is the type's cheapest available offering the NodePool allows,
	// per hour; 0 when none.
	Price float64
}

// Pod explains the pod namespace/name.
func Pod(in Input, namespace, name string) (*PodExplanation, error) {
	cluster := withUIDs(in.Cluster)
	var pod *corev1.Pod
	for _, p := range cluster.Pods {
		if p.Namespace == namespace && p.Name == name {
			pod = p
		}
	}
	if pod == nil {
		return nil, podNotFound(cluster.Pods, namespace, name)
	}
	status := podStatus(pod, nil)
	hypothetical := false
	if status != "" {
		// A pod on a node is judged as if it were pending now: where it
		// would go, and why, without its own node counting it.
		cluster, pod = unbind(cluster, pod)
		hypothetical = true
	}
	// Every waiting pod counts as pending, tried by kube-scheduler or not:
	// the question is where it would go.
	res := snapshot.Build(cluster, in.PoolTypes, snapshot.Options{Now: in.Now, NominationGrace: time.Minute, UntriedAfter: time.Nanosecond})
	for name, err := range in.PoolErrors {
		res.PoolErrors[name] = err
	}
	for _, name := range res.Static {
		if _, bad := res.PoolErrors[name]; !bad {
			res.PoolErrors[name] = fmt.Errorf("NodePool %s is static (spec.replicas): it keeps its replicas and launches no node for pending pods", name)
		}
	}
	if status == "" {
		status = podStatus(pod, res)
	}
	ex := &PodExplanation{Pod: namespace + "/" + name, Requests: resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}),
		Status: status, Hypothetical: hypothetical}
	for _, name := range sortedKeys(in.OverlayErrors) {
		ex.Notes = append(ex.Notes, fmt.Sprintf("NodeOverlay %s skipped: %v", name, in.OverlayErrors[name]))
	}

	plan, err := solver.Solve(res.Input)
	if err != nil {
		return nil, fmt.Errorf("solving the cluster's pending pods: %w", err)
	}
	ex.Decision = decide(plan, pod)
	if ex.Decision.Kind == DecisionUnschedulable {
		ex.Decision.Reason = namePoolErrors(ex.Decision.Reason, res.PoolErrors)
	}
	if claim := nominatedTo(res, pod); claim != "" && ex.Decision.Kind == DecisionNone {
		ex.Decision = Decision{Kind: DecisionNominated, NodeClaim: claim}
	}

	if ex.Decision.Kind == DecisionNominated {
		// Where else it would fit, and why not: judged without its own
		// NodeClaim holding it, or that claim would refuse it for want of
		// the room it holds for it.
		freed, freedPod := unbind(cluster, pod)
		res, pod = snapshot.Build(freed, in.PoolTypes, snapshot.Options{Now: in.Now, NominationGrace: time.Minute, UntriedAfter: time.Nanosecond}), freedPod
	}
	why, err := solver.ExplainPod(res.Input, pod)
	if err != nil {
		return nil, fmt.Errorf("explaining pod %s: %w", ex.Pod, err)
	}
	if why.Summary != "" {
		ex.Notes = append(ex.Notes, why.Summary)
	}
	ex.Existing = why.Existing
	ex.NodePools = poolFits(why, res, cluster.NodePools)
	return ex, nil
}

// podNotFound says a pod is not there, and names the pods a user may have
// meant: a workload's pods (offline, a Deployment web's are web-sim-0 and
// on; live, web-<hash>-<suffix>) or a pod of that name in other
// namespaces.
func podNotFound(pods []*corev1.Pod, namespace, name string) error {
	var like, elsewhere []string
	for _, p := range pods {
		switch {
		case p.Namespace == namespace && strings.HasPrefix(p.Name, name+"-"):
			like = append(like, p.Name)
		case p.Namespace != namespace && p.Name == name:
			elsewhere = append(elsewhere, p.Namespace)
		}
	}
	sort.Strings(like)
	sort.Strings(elsewhere)
	msg := fmt.Sprintf("pod %s/%s not found", namespace, name)
	switch {
	case len(like) > 0:
		more := ""
		if len(like) > 3 {
			more = fmt.Sprintf(" and %d more", len(like)-3)
			like = like[:3]
		}
		return fmt.Errorf("%s; the pods of that name's workload are %s%s: explain one of them", msg, strings.Join(like, ", "), more)
	case len(elsewhere) > 0:
		return fmt.Errorf("%s; a pod of that name is in namespace %s: pass -n", msg, strings.Join(elsewhere, ", "))
	}
	return fmt.Errorf("%s; check the name and namespace (-n), or that the manifests (-f) include it", msg)
}

// unbind returns the cluster with the pod waiting for a node, as
// kube-scheduler would leave it if it found none. The NodeClaims that
// nominated it forget it too: a pod bound within the nomination grace is
// still listed on the claim it was planned for, which would hold it there
// (its own node would then count it against itself).
func unbind(c *snapshot.Cluster, p *corev1.Pod) (*snapshot.Cluster, *corev1.Pod) {
	cp := p.DeepCopy()
	cp.Spec.NodeName, cp.Status.NominatedNodeName, cp.DeletionTimestamp = "", "", nil
	cp.Status.Phase = corev1.PodPending
	cp.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	out := *c
	out.Pods = make([]*corev1.Pod, len(c.Pods))
	for i, q := range c.Pods {
		if q == p {
			q = cp
		}
		out.Pods[i] = q
	}
	out.NodeClaims = make([]*karpv1.NodeClaim, len(c.NodeClaims))
	for i, nc := range c.NodeClaims {
		out.NodeClaims[i] = withoutNomination(nc, p.UID)
	}
	return &out, cp
}

// withoutNomination returns nc, or a copy that no longer lists uid among
// its nominated or displaced pods.
func withoutNomination(nc *karpv1.NodeClaim, uid types.UID) *karpv1.NodeClaim {
	var cp *karpv1.NodeClaim
	for _, key := range []string{snapshot.NominatedPodsAnnotation, snapshot.DisplacedPodsAnnotation} {
		v, ok := nc.Annotations[key]
		if !ok {
			continue
		}
		uids := snapshot.Nominations(v)
		kept := slices.DeleteFunc(slices.Clone(uids), func(u types.UID) bool { return u == uid })
		if len(kept) == len(uids) {
			continue
		}
		if cp == nil {
			cp = nc.DeepCopy()
		}
		cp.Annotations[key] = snapshot.EncodeNominations(kept)
	}
	if cp == nil {
		return nc
	}
	return cp
}

// nominatedTo is the in-flight NodeClaim the snapshot holds the pod on, or "".
func nominatedTo(res *snapshot.Result, p *corev1.Pod) string {
	for _, n := range res.Input.Nodes {
		for _, q := range n.Pods {
			if q.UID == p.UID && res.ClaimOf[n.Name] != "" {
				return res.ClaimOf[n.Name]
			}
		}
	}
	return ""
}

// podStatus says where the pod is. Without a snapshot it says only what
// the pod itself shows, "" for a pod that waits for a node.
func podStatus(p *corev1.Pod, res *snapshot.Result) string {
	switch {
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return "finished (" + string(p.Status.Phase) + ")"
	case p.DeletionTimestamp != nil:
		return "terminating"
	case p.Spec.NodeName != "":
		return "bound to node " + p.Spec.NodeName
	}
	if res != nil {
		for _, n := range res.Input.Nodes {
			for _, q := range n.Pods {
				if q.UID != p.UID {
					continue
				}
				if nnn := p.Status.NominatedNodeName; nnn != "" {
					// The lifecycle controller told kube-scheduler the plan.
					return fmt.Sprintf("pending, nominated to NodeClaim %s (node %s)", res.ClaimOf[n.Name], nnn)
				}
				return fmt.Sprintf("pending, nominated to in-flight NodeClaim %s", res.ClaimOf[n.Name])
			}
		}
	}
	switch {
	case p.Status.NominatedNodeName != "":
		return "nominated by kube-scheduler to node " + p.Status.NominatedNodeName
	case res == nil:
		return ""
	}
	for _, q := range res.Input.Pods {
		if q.UID == p.UID {
			return "pending"
		}
	}
	return "pending, but not one nodewright provisions for (a DaemonSet's or a node's own pod)"
}

func decide(plan *solver.Plan, pod *corev1.Pod) Decision {
	for _, pl := range plan.Placements {
		if pl.Pod.UID != pod.UID {
			continue
		}
		if pl.NewClaim < 0 {
			return Decision{Kind: DecisionExisting, Node: pl.Node}
		}
		c := plan.NewClaims[pl.NewClaim]
		d := Decision{Kind: DecisionLaunch, NodePool: c.NodePool, Price: c.Price(), Pods: len(c.Pods)}
		for _, it := range c.InstanceTypes {
			o, ok := it.Offerings.Cheapest(c.Requirements)
			if !ok {
				continue
			}
			d.InstanceTypes = append(d.InstanceTypes, TypeOption{Name: it.Name, Price: o.Price})
		}
		return d
	}
	for _, u := range plan.Unschedulable {
		if u.Pod.UID == pod.UID {
			return Decision{Kind: DecisionUnschedulable, Reason: u.Reason.Summary}
		}
	}
	return Decision{Kind: DecisionNone}
}

// namePoolErrors rewrites the solver's "no NodePool" (it saw none) when
// NodePools were left out as launching nothing: it named none of them, as
// if the cluster had no NodePool, while the lines below say why each
// launches nothing.
func namePoolErrors(reason string, errs map[string]error) string {
	if len(errs) == 0 {
		return reason
	}
	parts := strings.Split(reason, "; ")
	for i, p := range parts {
		if p == "no NodePool" || p == "unschedulable: no NodePool" {
			names := sortedKeys(errs)
			parts[i] = strings.Replace(p, "no NodePool", fmt.Sprintf("no NodePool can launch a node (%s: launches nothing, see below)", strings.Join(names, ", ")), 1)
		}
	}
	return strings.Join(parts, "; ")
}

// poolFits lists every NodePool: those the solver judged, with prices, and
// those the snapshot left out, with why. NodePools come in the solver's
// order (weight, then name), left-out ones last by name.
func poolFits(why *solver.Reason, res *snapshot.Result, pools []*karpv1.NodePool) []PoolFit {
	byName := map[string]*karpv1.NodePool{}
	for _, np := range pools {
		byName[np.Name] = np
	}
	var out []PoolFit
	for _, pr := range why.NodePools {
		pf := PoolFit{NodePool: pr.NodePool, Reason: pr.Reason}
		var reqs = snapshot.PoolRequirements(byName[pr.NodePool])
		types := map[string]float64{}
		for _, sp := range res.Input.NodePools {
			if sp.Name != pr.NodePool {
				continue
			}
			for _, it := range sp.InstanceTypes {
				if o, ok := it.Offerings.Cheapest(reqs); ok {
					types[it.Name] = o.Price
				}
			}
		}
		for _, tr := range pr.InstanceTypes {
			pf.Types = append(pf.Types, TypeFit{TypeReason: tr, Price: types[tr.InstanceType]})
		}
		out = append(out, pf)
	}
	for _, name := range sortedKeys(res.PoolErrors) {
		out = append(out, PoolFit{NodePool: name, NotReady: res.PoolErrors[name].Error()})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

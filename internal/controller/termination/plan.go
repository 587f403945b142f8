package termination

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/protect"
)

// DefaultStuckAfter is how long past its deletion timestamp a terminating pod
// is still waited for, as in Karpenter.
const DefaultStuckAfter = time.Minute

// Input is what a drain decision reads: a NodeClaim being deleted and, when
// it has a node, the pods bound to the node and the VolumeAttachments on it.
type Input struct {
	Claim *karpv1.NodeClaim
	// Node is nil when the claim has none (never launched or registered, or
	// the node is gone); there is nothing to drain then.
	Node              *corev1.Node
	Pods              []*corev1.Pod
	VolumeAttachments []*storagev1.VolumeAttachment
	// ClaimedVolumes maps the PersistentVolumeClaims the pods mount (see
	// ClaimsOf) to the PersistentVolume each is bound to. Only needed when
	// there are VolumeAttachments.
	ClaimedVolumes map[types.NamespacedName]string
	Now            time.Time
	// StuckAfter is how long past its deletion timestamp a terminating pod is
	// still waited for; 0 means DefaultStuckAfter.
	StuckAfter time.Duration
	// NoRoom holds the pods that no ready node has room for yet while new
	// capacity could take them (see Room). Their eviction waits, up to
	// RoomWait after the claim's deletion, so that they do not sit pending
	// while that capacity starts; nil waits for nothing.
	NoRoom   map[types.UID]string
	RoomWait time.Duration
}

// Deletion is a pod to delete, bypassing its PodDisruptionBudgets and
// karpenter.sh/do-not-disrupt, with a grace period that ends by the
// terminationGracePeriod's deadline.
type Deletion struct {
	Pod                *corev1.Pod
	GracePeriodSeconds int64
}

// PodState is a pod the drain waits for or passes over, and why.
type PodState struct {
	Pod    *corev1.Pod
	Reason string
}

// Why the drain waits for a pod.
const (
	WaitEvicting     = "being evicted"
	WaitTerminating  = "terminating"
	WaitDoNotDisrupt = "has " + karpv1.DoNotDisruptAnnotationKey
	WaitEarlierGroup = "waits for an earlier wave"
	WaitDeleting     = "deleted for the terminationGracePeriod"
	WaitNoRoom       = "waits for room on a ready node"
)

// RoomRecheck is how often a drain that waits for room looks again.
const RoomRecheck = 5 * time.Second

// Plan is what to do next for a NodeClaim being deleted.
type Plan struct {
	// Deadline is when the claim's terminationGracePeriod runs out; zero
	// when it has none.
	Deadline time.Time
	// AnnotateDeadline asks for Deadline to be written to the claim's
	// karpenter.sh/nodeclaim-termination-timestamp annotation.
	AnnotateDeadline bool
	// GraceElapsed is true once the deadline has passed: remaining pods are
	// deleted at once and nothing more is waited for.
	GraceElapsed bool
	// PrepareNode asks for the node to be tainted and excluded from load
	// balancers (see Prepare).
	PrepareNode bool
	// Evict are the pods to evict now through the Eviction API.
	Evict []*corev1.Pod
	// Delete are the pods to delete now for the terminationGracePeriod.
	Delete []Deletion
	// Waiting are the pods the drain still waits for, and why.
	Waiting []PodState
	// Skipped are the pods on the node the drain neither evicts nor waits
	// for, and why (see Skip).
	Skipped []PodState
	// Drained is true when no pod is waited for any more.
	Drained bool
	// PendingVolumes are the VolumeAttachments the instance waits for once
	// the node is drained; nil before, and after the deadline.
	PendingVolumes []*storagev1.VolumeAttachment
	// RecheckAt is the next time the plan changes with the clock alone (a
	// pod's deletion falls due, the deadline passes, a terminating pod stops
	// being waited for); zero when nothing is due.
	RecheckAt time.Time
}

// Finished reports whether the node is drained and its volumes detached, or
// the deadline passed: the instance may be deleted.
func (p *Plan) Finished() bool {
	return p.Drained && (p.GraceElapsed || len(p.PendingVolumes) == 0)
}

// Decide plans the next step of a NodeClaim's termination. It is pure: the
// same input gives the same plan, and acting on a plan twice does no harm,
// so the caller may re-plan from a fresh snapshot at any time.
func Decide(in Input) Plan {
	var p Plan
	p.Deadline, p.AnnotateDeadline = Deadline(in.Claim)
	p.GraceElapsed = !p.Deadline.IsZero() && !in.Now.Before(p.Deadline)
	if in.Node == nil {
		p.Drained = true
		return p
	}
	_, p.PrepareNode = Prepare(in.Node)
	stuckAfter := in.StuckAfter
	if stuckAfter <= 0 {
		stuckAfter = DefaultStuckAfter
	}

	var groups [4][]*corev1.Pod
	deleting := map[types.UID]bool{}
	for _, pod := range sortedPods(in.Pods) {
		if why := Skip(pod, in.Now, stuckAfter); why != "" {
			p.Skipped = append(p.Skipped, PodState{pod, why})
			continue
		}
		if pod.DeletionTimestamp != nil {
			p.recheck(pod.DeletionTimestamp.Add(stuckAfter + time.Second))
		}
		if d, ok := p.deletion(pod, in.Now); ok {
			p.Delete = append(p.Delete, d)
			deleting[pod.UID] = true
		}
		g := GroupOf(pod)
		groups[g] = append(groups[g], pod)
	}
	if p.GraceElapsed {
		// Delete ends what is left without grace; nothing is waited for.
		p.Drained = true
		p.RecheckAt = time.Time{}
		return p
	}

	waitRoom := len(in.NoRoom) > 0 && in.Claim.DeletionTimestamp != nil &&
		in.Now.Before(in.Claim.DeletionTimestamp.Add(in.RoomWait))
	current := true
	for _, pods := range groups {
		for _, pod := range pods {
			held, until, _ := protect.DoNotDisrupt(pod, in.Now)
			if held && !until.IsZero() {
				p.recheck(until)
			}
			switch {
			case pod.DeletionTimestamp != nil:
				p.Waiting = append(p.Waiting, PodState{pod, WaitTerminating})
			case deleting[pod.UID]:
				p.Waiting = append(p.Waiting, PodState{pod, WaitDeleting})
			case !current:
				p.Waiting = append(p.Waiting, PodState{pod, WaitEarlierGroup})
			case held:
				p.Waiting = append(p.Waiting, PodState{pod, WaitDoNotDisrupt})
			case waitRoom && in.NoRoom[pod.UID] != "":
				p.Waiting = append(p.Waiting, PodState{pod, WaitNoRoom})
				p.recheck(in.Now.Add(RoomRecheck))
				p.recheck(in.Claim.DeletionTimestamp.Add(in.RoomWait))
			default:
				p.Evict = append(p.Evict, pod)
				p.Waiting = append(p.Waiting, PodState{pod, WaitEvicting})
			}
		}
		if len(pods) > 0 {
			current = false
		}
	}
	p.Drained = len(p.Waiting) == 0
	if !p.Deadline.IsZero() {
		p.recheck(p.Deadline)
	}
	if p.Drained {
		p.PendingVolumes = pendingVolumes(in, p.Skipped)
	}
	return p
}

// deletion is whether the terminationGracePeriod makes a pod due for
// deletion now: at the deadline less the pod's own grace period (and a
// second, as grace periods count whole seconds), so that it gets all of it
// and is gone by the deadline; and when it is already terminating with a
// grace period that would outlast the deadline, again with a shorter one.
// After the deadline every pod is deleted without grace.
func (p *Plan) deletion(pod *corev1.Pod, now time.Time) (Deletion, bool) {
	if p.Deadline.IsZero() {
		return Deletion{}, false
	}
	if p.GraceElapsed {
		if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0 {
			return Deletion{}, false // being removed already, held by finalizers
		}
		return Deletion{Pod: pod, GracePeriodSeconds: 0}, true
	}
	left := int64(p.Deadline.Sub(now) / time.Second)
	if pod.DeletionTimestamp != nil {
		if pod.DeletionTimestamp.After(p.Deadline) {
			return Deletion{Pod: pod, GracePeriodSeconds: left}, true
		}
		return Deletion{}, false
	}
	due := p.Deadline.Add(-gracePeriod(pod) - time.Second)
	if now.Before(due) {
		p.recheck(due)
		return Deletion{}, false
	}
	return Deletion{Pod: pod, GracePeriodSeconds: min(left, int64(gracePeriod(pod)/time.Second))}, true
}

func (p *Plan) recheck(t time.Time) {
	if p.RecheckAt.IsZero() || t.Before(p.RecheckAt) {
		p.RecheckAt = t
	}
}

// Deadline is when a NodeClaim's terminationGracePeriod runs out: its
// deletion time plus spec.terminationGracePeriod, or the time in its
// karpenter.sh/nodeclaim-termination-timestamp annotation when that is
// earlier (another controller may have set a tighter one, as Karpenter's
// node health controller does). annotate says the annotation must be
// written. Zero when neither applies.
func Deadline(nc *karpv1.NodeClaim) (deadline time.Time, annotate bool) {
	var fromSpec time.Time
	if nc.Spec.TerminationGracePeriod != nil && nc.DeletionTimestamp != nil {
		fromSpec = nc.DeletionTimestamp.Add(nc.Spec.TerminationGracePeriod.Duration).Truncate(time.Second)
	}
	v, ok := nc.Annotations[karpv1.NodeClaimTerminationTimestampKey]
	annotated, err := time.Parse(time.RFC3339, v)
	if ok && err == nil && (fromSpec.IsZero() || !annotated.After(fromSpec)) {
		return annotated, false
	}
	return fromSpec, !fromSpec.IsZero()
}

// FormatDeadline is a deadline as the annotation holds it.
func FormatDeadline(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Prepare returns the node as the drain needs it: tainted
// karpenter.sh/disrupted:NoSchedule so nothing new lands on it, and labelled
// node.kubernetes.io/exclude-from-external-load-balancers so load balancers
// stop sending it traffic before it goes, as Karpenter does. Like Karpenter
// it does not cordon: the taint keeps pods off, and pods that tolerate it are
// not drained. changed is false when the node is already so.
func Prepare(n *corev1.Node) (out *corev1.Node, changed bool) {
	out = n.DeepCopy()
	tainted := false
	for _, t := range n.Spec.Taints {
		if t.MatchTaint(&karpv1.DisruptedNoScheduleTaint) {
			tainted = true
		}
	}
	if !tainted {
		out.Spec.Taints = append(out.Spec.Taints, karpv1.DisruptedNoScheduleTaint)
		changed = true
	}
	if _, ok := n.Labels[corev1.LabelNodeExcludeBalancers]; !ok {
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[corev1.LabelNodeExcludeBalancers] = "nodewright"
		changed = true
	}
	return out, changed
}

// ClaimsOf lists the PersistentVolumeClaims a pod mounts, generic ephemeral
// volumes included.
func ClaimsOf(p *corev1.Pod) []types.NamespacedName {
	var out []types.NamespacedName
	for _, v := range p.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, types.NamespacedName{Namespace: p.Namespace, Name: v.PersistentVolumeClaim.ClaimName})
		case v.Ephemeral != nil:
			out = append(out, types.NamespacedName{Namespace: p.Namespace, Name: p.Name + "-" + v.Name})
		}
	}
	return out
}

// pendingVolumes are the node's VolumeAttachments of persistent volumes,
// less those of pods the drain passed over: those pods stay, so would their
// volumes, and waiting for them would only hold the node (Karpenter's rule).
// Finished pods' volumes are waited for; they are detached once unmounted.
func pendingVolumes(in Input, skipped []PodState) []*storagev1.VolumeAttachment {
	ignore := map[string]bool{}
	for _, s := range skipped {
		if s.Reason == SkipTerminal {
			continue
		}
		for _, c := range ClaimsOf(s.Pod) {
			if pv := in.ClaimedVolumes[c]; pv != "" {
				ignore[pv] = true
			}
		}
	}
	var out []*storagev1.VolumeAttachment
	for _, va := range in.VolumeAttachments {
		pv := va.Spec.Source.PersistentVolumeName
		if va.Spec.NodeName != in.Node.Name || pv == nil || ignore[*pv] {
			continue
		}
		out = append(out, va)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func sortedPods(pods []*corev1.Pod) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pods...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

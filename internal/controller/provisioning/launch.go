package provisioning

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/parallel"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// createClaims creates the plan's NodeClaims in parallel and returns how
// many were created. Pods of a claim that failed stay pending and are
// planned again by the next loop.
func (p *Provisioner) createClaims(ctx context.Context, pools map[string]*karpv1.NodePool, plan *solver.Plan, displaced map[types.UID]bool) int {
	logger := log.FromContext(ctx)
	var mu sync.Mutex
	created := 0
	parallel.Do(len(plan.NewClaims), p.Opts.CreateConcurrency, func(i int) {
		c := plan.NewClaims[i]
		np := pools[c.NodePool]
		if np == nil {
			return
		}
		nc := NodeClaimFor(np, c)
		markDisplaced(nc, nil, c.Pods, displaced)
		// The name is chosen here, not by the server (generateName), so that
		// a create whose response is lost is still known: the next loop
		// waits for the cache to show it (or the server to deny it) instead
		// of planning its pods onto a second NodeClaim.
		nc.GenerateName, nc.Name = "", np.Name+"-"+utilrand.String(5)
		if err := p.Client.Create(ctx, nc); err != nil {
			if !apierrors.IsAlreadyExists(err) && !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
				p.expect(nc.Name, nc.Annotations[snapshot.NominatedPodsAnnotation])
			}
			logger.Error(err, "creating NodeClaim", "nodepool", np.Name, "nodeclaim", nc.Name, "pods", len(c.Pods))
			return
		}
		p.expect(nc.Name, nc.Annotations[snapshot.NominatedPodsAnnotation])
		metrics.NodeClaimsCreated.WithLabelValues(metrics.ReasonProvisioned, np.Name).Inc()
		p.Recorder.Eventf(nc, corev1.EventTypeNormal, "Created", "NodeClaim for %d pods, requests %s, instance types %s",
			len(c.Pods), formatList(c.Requests), typeNames(c))
		p.events.add(nc.Name, c.Pods)
		mu.Lock()
		created++
		mu.Unlock()
	})
	return created
}

// nominateInFlight records pods the plan put on NodeClaims that are still
// starting, adding them to the claims' nominations. Nominations of pods that
// are no longer pending are dropped at the same time, so the list stays short.
func (p *Provisioner) nominateInFlight(ctx context.Context, cluster *snapshot.Cluster, ours snapshot.Nominated, res *snapshot.Result, plan *solver.Plan, displaced map[types.UID]bool) {
	inFlight := map[string]bool{}
	for _, n := range res.Input.Nodes {
		if n.InFlight && !n.Deleting {
			inFlight[n.Name] = true
		}
	}
	add := map[string][]*corev1.Pod{}
	for _, pl := range plan.Placements {
		if _, bound := res.Draining[pl.Pod.UID]; bound || pl.Node == "" || !inFlight[pl.Node] {
			continue // a draining node's pod is bound: the room is kept for it by planning it every loop
		}
		if claim := res.ClaimOf[pl.Node]; claim != "" {
			add[claim] = append(add[claim], pl.Pod)
		}
	}
	if len(add) == 0 {
		return
	}
	pending := map[types.UID]bool{}
	now := time.Now()
	for _, pod := range cluster.Pods {
		if ours.ProvisionableAt(pod, now, p.Opts.UntriedAfter) {
			pending[pod.UID] = true
		}
	}
	claims := map[string]*karpv1.NodeClaim{}
	for _, nc := range cluster.NodeClaims {
		claims[nc.Name] = nc
	}
	logger := log.FromContext(ctx)
	names := make([]string, 0, len(add))
	for name := range add {
		names = append(names, name)
	}
	parallel.Do(len(names), p.Opts.CreateConcurrency, func(i int) {
		name, pods := names[i], add[names[i]]
		nc := claims[name]
		if nc == nil {
			return
		}
		var uids []types.UID
		for _, uid := range snapshot.Nominations(nc.Annotations[snapshot.NominatedPodsAnnotation]) {
			if pending[uid] {
				uids = append(uids, uid)
			}
		}
		for _, pod := range pods {
			uids = append(uids, pod.UID)
		}
		value := snapshot.EncodeNominations(uids)
		patched := nc.DeepCopy()
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[snapshot.NominatedPodsAnnotation] = value
		markDisplaced(patched, pending, pods, displaced)
		// No optimistic lock: only the leader's provisioner writes
		// nominations, and the loop waits until the cache shows its last
		// ones, so the value it extends is current. A lock would fail on
		// every status change the lifecycle controller makes meanwhile.
		if err := p.Client.Patch(ctx, patched, client.MergeFrom(nc)); err != nil {
			logger.Error(err, "nominating pods to in-flight NodeClaim", "nodeclaim", name)
			return
		}
		p.expect(name, value)
		p.events.add(name, pods)
	})
}

// markDisplaced sets the claim's DisplacedPodsAnnotation to the pods it
// already lists that are still pending (none for a claim being created,
// whose pending is nil) and the displaced ones of pods, and removes it when
// that leaves none. A nil displaced (the provisioner's MarkDisplaced off)
// leaves the claim as it is.
func markDisplaced(nc *karpv1.NodeClaim, pending map[types.UID]bool, pods []*corev1.Pod, displaced map[types.UID]bool) {
	if displaced == nil {
		return
	}
	var uids []types.UID
	for _, uid := range snapshot.Nominations(nc.Annotations[snapshot.DisplacedPodsAnnotation]) {
		if pending[uid] {
			uids = append(uids, uid)
		}
	}
	for _, pod := range pods {
		if displaced[pod.UID] {
			uids = append(uids, pod.UID)
		}
	}
	if len(uids) == 0 {
		delete(nc.Annotations, snapshot.DisplacedPodsAnnotation)
		return
	}
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[snapshot.DisplacedPodsAnnotation] = snapshot.EncodeNominations(uids)
}

// recordUnschedulable tells each pod the plan could not place why, as an
// event kubectl describe shows.
func (p *Provisioner) recordUnschedulable(plan *solver.Plan) {
	for _, u := range plan.Unschedulable {
		msg := u.Reason.String()
		if len(msg) > 1000 {
			msg = msg[:997] + "..."
		}
		p.Recorder.Eventf(u.Pod, corev1.EventTypeWarning, "FailedScheduling", "Failed to schedule pod: %s", msg)
	}
}

func typeNames(c *solver.NewClaim) string {
	const show = 5
	s := ""
	for i, it := range c.InstanceTypes {
		if i == show {
			return s + fmt.Sprintf(" and %d more", len(c.InstanceTypes)-show)
		}
		if i > 0 {
			s += ", "
		}
		s += it.Name
	}
	return s
}

func formatList(rl corev1.ResourceList) string {
	s := ""
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		if q, ok := rl[name]; ok {
			if s != "" {
				s += " "
			}
			s += string(name) + "=" + q.String()
		}
	}
	for name, q := range rl {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourcePods {
			s += " " + string(name) + "=" + q.String()
		}
	}
	return s
}

package kwok

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// The agent plays the part of the machines: it creates the Nodes of delayed
// launches when they are due, turns Nodes NotReady for their window, removes
// agent taints when the simulated agents become ready, and issues the
// interruptions asked for, terminating instances whose notice ran out. Every decision
// follows from the objects and the clock, so each pass may be repeated, and a
// restarted controller resumes where the last one stopped.

// Agent returns the agent as a manager.Runnable; like every runnable that
// does not say otherwise, it runs on the elected leader only.
func (p *Provider) Agent() manager.Runnable { return manager.RunnableFunc(p.RunAgent) }

// RunAgent runs SyncAgent every AgentInterval until ctx ends. A failed pass
// is logged and the next one tries again.
func (p *Provider) RunAgent(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("kwok-agent")
	ctx = log.IntoContext(ctx, logger)
	ticker := p.clock.NewTicker(p.opts.AgentInterval)
	defer ticker.Stop()
	for {
		if err := p.SyncAgent(ctx); err != nil {
			logger.Error(err, "kwok agent pass failed; the next pass retries")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// SyncAgent makes one pass of the agent over all instances. It reads the
// cache's own objects, without copies (a pass a second over every Node and
// NodeClaim copied them all, 7% of the controller's CPU in a 10,000-pod
// profile), and copies only a Node it has something to do on and a
// NodeClaim whose Node it creates.
func (p *Provider) SyncAgent(ctx context.Context) error {
	now := p.clock.Now()
	nodes := &corev1.NodeList{}
	if err := p.client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("kwok agent: listing Nodes: %w", err)
	}
	claims := &karpv1.NodeClaimList{}
	if err := p.client.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("kwok agent: listing NodeClaims: %w", err)
	}
	var errs []error
	claimOf := map[string]*karpv1.NodeClaim{}
	for i := range claims.Items {
		claimOf[claims.Items[i].Name] = &claims.Items[i]
	}
	nodeExists := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		nodeExists[n.Name] = true
		if isInstance(n) && n.DeletionTimestamp == nil && !quiet(n, claimOf[n.Name]) {
			errs = append(errs, p.syncNode(ctx, n.DeepCopy(), claimOf[n.Name], now))
		}
	}
	for i := range claims.Items {
		c := &claims.Items[i]
		if due, ok := registrationTime(c); ok && !nodeExists[c.Name] && p.pending(c, now) && !now.Before(due) {
			errs = append(errs, p.register(ctx, c.DeepCopy(), now))
		}
	}
	return errors.Join(errs...)
}

// quiet reports whether syncNode has nothing to do on node, of claim (nil
// when it has none): no fault stored on it, no unhealthy fault asked or
// under way, no interruption asked of it or of its claim nor under way.
// Most Nodes are quiet on most passes, and are then not copied.
func quiet(node *corev1.Node, claim *karpv1.NodeClaim) bool {
	for _, k := range []string{FaultsAnnotation, UnhealthyAnnotation, UnhealthySinceAnnotation, InterruptAnnotation, InterruptionAnnotation} {
		if _, ok := node.Annotations[k]; ok {
			return false
		}
	}
	if claim != nil {
		if _, ok := claim.Annotations[InterruptAnnotation]; ok {
			return false
		}
	}
	return true
}

// register creates the Node of a pending instance whose delay has passed.
// Its NotReady window and agent taints come from the NodeClass as it is now,
// as a real node's agents start with the configuration of the day.
func (p *Provider) register(ctx context.Context, claim *karpv1.NodeClaim, now time.Time) error {
	it := p.byName[claim.Labels[corev1.LabelInstanceTypeStable]]
	if it == nil {
		return fmt.Errorf("creating the Node of NodeClaim %s: instance type %q is not in the catalog", claim.Name, claim.Labels[corev1.LabelInstanceTypeStable])
	}
	faults := p.opts.DefaultFaults
	nc, err := p.nodeClass(ctx, claim)
	var notReady *cloudprovider.NodeClassNotReadyError
	switch {
	case err == nil:
		faults = effectiveFaults(nc.Spec.Faults, p.opts.DefaultFaults)
	case !errors.As(err, &notReady):
		return fmt.Errorf("creating the Node of NodeClaim %s: %w", claim.Name, err)
	}
	node, err := p.buildNode(claim, it, faults, now)
	if err != nil {
		return fmt.Errorf("creating the Node of NodeClaim %s: %w", claim.Name, err)
	}
	if _, err := p.createNode(ctx, node); err != nil {
		return fmt.Errorf("creating the Node of NodeClaim %s: %w", claim.Name, err)
	}
	log.FromContext(ctx).Info("registration delay passed; created Node", "nodeclaim", claim.Name, "node", node.Name)
	return nil
}

// syncNode plays the faults stored on one of the provider's Nodes, the
// unhealthy fault asked of it, and the interruption asked of it or of its
// NodeClaim (nil when it has none).
func (p *Provider) syncNode(ctx context.Context, node *corev1.Node, claim *karpv1.NodeClaim, now time.Time) error {
	// An interruption may delete the Node; nothing else is done to it then.
	if gone, err := p.syncInterruption(ctx, node, claim, now); err != nil || gone {
		return err
	}
	f, err := decodeNodeFaults(node.Annotations[FaultsAnnotation])
	if err != nil {
		return fmt.Errorf("Node %s: %w", node.Name, err)
	}
	created := createdAt(node)
	// An unhealthy fault outlasts any notReady window, which would end by
	// giving the Node back to kwok; the window waits until it is over.
	held, err := p.syncUnhealthy(ctx, node, now)
	errs := []error{err}
	if f.NotReady != nil && !held {
		errs = append(errs, p.syncNotReady(ctx, node, *f.NotReady, created, now))
	}
	errs = append(errs, p.removeAgentTaints(ctx, node, f.AgentTaints, created, now))
	return errors.Join(errs...)
}

// syncNotReady keeps node NotReady during [created+after, created+after+for)
// and, once the window has passed, lets kwok have it back and records that
// the window is done, so that it comes once per Node. A window the agent
// missed entirely, while the controller was down, is only recorded.
func (p *Provider) syncNotReady(ctx context.Context, node *corev1.Node, w kwokv1alpha1.KWOKNotReadyFault, created, now time.Time) error {
	if _, done := node.Annotations[NotReadyDoneAnnotation]; done {
		return nil
	}
	start := created.Add(w.After.Duration)
	end := start.Add(w.For.Duration)
	logger := log.FromContext(ctx).WithValues("node", node.Name)
	switch {
	case now.Before(start):
		return nil
	case now.Before(end):
		// The label comes first: it tells kwok to stop reporting the Node
		// Ready, so that the condition below sticks.
		if node.Labels[NotReadyLabel] != "true" {
			orig := node.DeepCopy()
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			node.Labels[NotReadyLabel] = "true"
			if err := p.client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
				return fmt.Errorf("Node %s: labelling it NotReady: %w", node.Name, err)
			}
			logger.Info("NotReady window opened", "until", end)
		}
		return p.setNotReady(ctx, node, now)
	default:
		orig := node.DeepCopy()
		delete(node.Labels, NotReadyLabel)
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[NotReadyDoneAnnotation] = now.UTC().Format(time.RFC3339)
		if err := p.client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("Node %s: ending its NotReady window: %w", node.Name, err)
		}
		logger.Info("NotReady window closed; kwok reports the Node again")
		return nil
	}
}

// setNotReady sets the Node's Ready condition to False, as a node controller
// would see it while the kubelet restarts.
func (p *Provider) setNotReady(ctx context.Context, node *corev1.Node, now time.Time) error {
	i := -1
	for j, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			i = j
		}
	}
	if i >= 0 && node.Status.Conditions[i].Status == corev1.ConditionFalse && node.Status.Conditions[i].Reason == NotReadyReason {
		return nil
	}
	orig := node.DeepCopy()
	cond := corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: NotReadyReason,
		Message:           "kubelet is restarting (kwok fault injection: faults.notReady)",
		LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now),
	}
	if i < 0 {
		node.Status.Conditions = append(node.Status.Conditions, cond)
	} else {
		if node.Status.Conditions[i].Status == corev1.ConditionFalse {
			cond.LastTransitionTime = node.Status.Conditions[i].LastTransitionTime
		}
		node.Status.Conditions[i] = cond
	}
	// A strategic merge patch changes the Ready entry alone, whoever wrote
	// the others.
	if err := p.client.Status().Patch(ctx, node, client.StrategicMergeFrom(orig)); err != nil {
		return fmt.Errorf("Node %s: setting Ready=False: %w", node.Name, err)
	}
	return nil
}

// removeAgentTaints removes the agent taints whose removeAfter has passed,
// whenever they are on the Node, as an agent that is ready removes its taint.
func (p *Provider) removeAgentTaints(ctx context.Context, node *corev1.Node, agentTaints []kwokv1alpha1.KWOKAgentTaint, created, now time.Time) error {
	var ready []corev1.Taint
	for _, t := range agentTaints {
		if t.RemoveAfter != nil && !now.Before(created.Add(t.RemoveAfter.Duration)) {
			ready = append(ready, corev1.Taint{Key: t.Key, Effect: t.Effect})
		}
	}
	if len(ready) == 0 {
		return nil
	}
	kept := make([]corev1.Taint, 0, len(node.Spec.Taints))
	var removed []string
	for _, t := range node.Spec.Taints {
		if hasTaint(ready, t) {
			removed = append(removed, t.ToString())
			continue
		}
		kept = append(kept, t)
	}
	if len(removed) == 0 {
		return nil
	}
	orig := node.DeepCopy()
	node.Spec.Taints = kept
	// Taints are replaced as a whole list, so the patch must not overwrite a
	// change someone else made since we read the Node: on conflict the next
	// pass tries again.
	err := p.client.Patch(ctx, node, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		log.FromContext(ctx).V(1).Info("Node changed while removing agent taints; retrying on the next pass", "node", node.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("Node %s: removing agent taints %v: %w", node.Name, removed, err)
	}
	log.FromContext(ctx).Info("agent ready; removed its taints", "node", node.Name, "taints", removed)
	return nil
}

func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for i := range taints {
		if taints[i].MatchTaint(&t) {
			return true
		}
	}
	return false
}

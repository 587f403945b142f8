package termination

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/controller/nodeclaim"
	"github.com/nodewright/nodewright/internal/metrics"
)

// Condition reasons, as Karpenter writes them.
const (
	ReasonDraining                 = "Draining"
	ReasonDrained                  = "Drained"
	ReasonAwaitingVolumeDetachment = "AwaitingVolumeDetachment"
	ReasonVolumesDetached          = "VolumesDetached"
)

// act carries a plan out, in the order that keeps it safe to stop at any
// point: the deadline is recorded and the node tainted before any pod is
// touched, and the conditions that release the instance are written last.
func (c *Controller) act(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node, plan Plan) (reconcile.Result, error) {
	now := c.Now()
	if plan.AnnotateDeadline {
		patched, err := c.annotateDeadline(ctx, nc, node, plan.Deadline)
		if err != nil {
			return retryOn(err, "recording the termination deadline")
		}
		nc = patched
	}
	if plan.PrepareNode && node != nil {
		if err := c.prepareNode(ctx, node); err != nil {
			return retryOn(err, "tainting node "+node.Name)
		}
	}
	if err := c.deletePods(ctx, nc, plan); err != nil {
		return reconcile.Result{}, err
	}
	c.evictPods(ctx, nc, node, plan.Evict, now)
	if err := c.setConditions(ctx, nc, node, plan); err != nil {
		return retryOn(err, "updating NodeClaim conditions")
	}
	if plan.Finished() {
		c.retries.forget(nc.Name)
		return reconcile.Result{}, nil
	}
	after := c.Opts.Resync
	for _, t := range []time.Time{plan.RecheckAt, c.retries.next(nc.Name, now)} {
		if !t.IsZero() {
			after = min(after, t.Sub(now))
		}
	}
	return reconcile.Result{RequeueAfter: max(after, 100*time.Millisecond)}, nil
}

// retryOn turns a conflict (a stale cache) into a quick retry and drops
// errors about objects that are gone.
func retryOn(err error, what string) (reconcile.Result, error) {
	switch {
	case apierrors.IsConflict(err):
		return reconcile.Result{RequeueAfter: 250 * time.Millisecond}, nil
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, fmt.Errorf("%s: %w", what, err)
}

func (c *Controller) annotateDeadline(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node, deadline time.Time) (*karpv1.NodeClaim, error) {
	patched := nc.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[karpv1.NodeClaimTerminationTimestampKey] = FormatDeadline(deadline)
	if err := c.Client.Patch(ctx, patched, client.MergeFromWithOptions(nc, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, err
	}
	log.FromContext(ctx).Info("recorded termination deadline", "deadline", FormatDeadline(deadline))
	msg := "All pods will be deleted by " + FormatDeadline(deadline)
	c.event(patched, node, corev1.EventTypeWarning, "TerminationGracePeriodExpiring", msg)
	return patched, nil
}

func (c *Controller) prepareNode(ctx context.Context, node *corev1.Node) error {
	out, changed := Prepare(node)
	if !changed {
		return nil
	}
	if err := c.Client.Patch(ctx, out, client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	log.FromContext(ctx).Info("tainted node", "node", node.Name, "taint", karpv1.DisruptedTaintKey+":NoSchedule")
	return nil
}

// deletePods deletes the pods the terminationGracePeriod makes due. A pod
// already gone, or replaced by another of the same name, is no error.
func (c *Controller) deletePods(ctx context.Context, nc *karpv1.NodeClaim, plan Plan) error {
	var done []string
	for _, d := range plan.Delete {
		uid := d.Pod.UID
		err := c.Client.Delete(ctx, d.Pod, client.GracePeriodSeconds(d.GracePeriodSeconds), client.Preconditions{UID: &uid})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("deleting pod %s/%s: %w", d.Pod.Namespace, d.Pod.Name, err)
		}
		log.FromContext(ctx).Info("deleted pod for the terminationGracePeriod", "pod", podKey(d.Pod),
			"gracePeriodSeconds", d.GracePeriodSeconds, "deadline", FormatDeadline(plan.Deadline))
		c.Recorder.Eventf(d.Pod, corev1.EventTypeNormal, "Disrupted",
			"Deleting the pod with %ds of grace so that it is gone by its node's termination deadline %s; this bypasses PodDisruptionBudgets and %s",
			d.GracePeriodSeconds, FormatDeadline(plan.Deadline), karpv1.DoNotDisruptAnnotationKey)
		done = append(done, fmt.Sprintf("%s (%ds)", podKey(d.Pod), d.GracePeriodSeconds))
	}
	if len(done) > 0 {
		c.Recorder.Eventf(nc, corev1.EventTypeNormal, "Disrupted", "Deleted pod %s for the termination deadline %s",
			summarize(done), FormatDeadline(plan.Deadline))
	}
	return nil
}

// evictPods asks the Eviction API to evict pods whose retry is due. A 404
// (gone) or 409 (another pod of that name) needs nothing more; a 429 (a
// PodDisruptionBudget) or any other refusal is retried with backoff.
func (c *Controller) evictPods(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node, pods []*corev1.Pod, now time.Time) {
	reason := drainReason(nc)
	var evicted, refused []string
	for _, p := range pods {
		if !c.retries.due(nc.Name, p.UID, now) {
			continue
		}
		err := c.evict(ctx, p)
		switch {
		case err == nil:
			c.retries.succeeded(nc.Name, p.UID)
			metrics.PodsDrained.WithLabelValues(reason).Inc()
			c.Recorder.Eventf(p, corev1.EventTypeNormal, "Evicted", "Evicted pod: node %s is terminating", nodeName(node))
			evicted = append(evicted, podKey(p))
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			c.retries.succeeded(nc.Name, p.UID)
		default:
			next := c.retries.failed(nc.Name, p.UID, now)
			log.FromContext(ctx).Info("eviction refused", "pod", podKey(p), "retryAt", next, "error", err.Error())
			refused = append(refused, podKey(p)+": "+refusal(err))
		}
	}
	if len(evicted) > 0 {
		if c.Room != nil {
			c.Room.Forget()
		}
		c.Recorder.Eventf(nc, corev1.EventTypeNormal, "Evicted", "Evicted pod %s", summarize(evicted))
		// One line per wave, naming every pod: the events above are
		// summarized and expire, and a pod that later finds no node is
		// traced back through this line.
		log.FromContext(ctx).Info("evicted pods", "node", nodeName(node), "reason", reason, "pods", evicted)
	}
	if len(refused) > 0 {
		c.event(nc, node, corev1.EventTypeWarning, "FailedDraining", "Failed to drain node: evicting "+summarize(refused))
	}
}

func (c *Controller) evict(ctx context.Context, p *corev1.Pod) error {
	uid := p.UID
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	err := c.Client.SubResource("eviction").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}, eviction)
	code := "200"
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code = strconv.Itoa(int(status.Status().Code))
	} else if err != nil {
		code = "error"
	}
	metrics.PodEvictionRequests.WithLabelValues(code).Inc()
	return err
}

// refusal says why an eviction was refused, naming the PodDisruptionBudget
// when the API server does.
func refusal(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err.Error()
	}
	s := status.Status()
	if s.Details != nil {
		for _, cause := range s.Details.Causes {
			if cause.Type == policyv1.DisruptionBudgetCause {
				return "blocked by PodDisruptionBudget: " + cause.Message
			}
		}
	}
	if s.Code == 429 {
		return "blocked by a PodDisruptionBudget: " + s.Message
	}
	return s.Message
}

// setConditions records the drain's progress in the claim's Drained and
// VolumesDetached conditions, announcing each change.
func (c *Controller) setConditions(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node, plan Plan) error {
	after := nc.DeepCopy()
	drained := drainedCondition(plan)
	drained.ObservedGeneration = nc.Generation
	changedDrain := meta.SetStatusCondition(&after.Status.Conditions, drained)
	var volumes metav1.Condition
	changedVolumes := false
	if plan.Drained {
		volumes = volumesCondition(plan)
		volumes.ObservedGeneration = nc.Generation
		changedVolumes = meta.SetStatusCondition(&after.Status.Conditions, volumes)
	}
	if !changedDrain && !changedVolumes {
		return nil
	}
	if err := c.Client.Status().Patch(ctx, after, client.MergeFromWithOptions(nc, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	if node == nil {
		return nil // nothing was drained; nothing to tell
	}
	if reasonChanged(nc, drained) {
		switch drained.Reason {
		case ReasonDraining:
			c.event(after, node, corev1.EventTypeNormal, "Draining", "Draining node "+node.Name+": "+drained.Message)
		case ReasonDrained:
			metrics.NodesDrained.WithLabelValues(nc.Labels[karpv1.NodePoolLabelKey]).Inc()
			c.event(after, node, corev1.EventTypeNormal, "Drained", "Drained node "+node.Name)
		case nodeclaim.ReasonTerminationGracePeriodElapsed:
			metrics.NodesDrained.WithLabelValues(nc.Labels[karpv1.NodePoolLabelKey]).Inc()
			c.event(after, node, corev1.EventTypeWarning, "TerminationGracePeriodElapsed", drained.Message)
		}
	}
	if changedVolumes && reasonChanged(nc, volumes) && volumes.Reason == ReasonAwaitingVolumeDetachment {
		c.event(after, node, corev1.EventTypeWarning, ReasonAwaitingVolumeDetachment, volumes.Message)
	}
	log.FromContext(ctx).V(1).Info("drain progress", "drained", drained.Reason, "volumes", volumes.Reason)
	return nil
}

func reasonChanged(nc *karpv1.NodeClaim, c metav1.Condition) bool {
	old := meta.FindStatusCondition(nc.Status.Conditions, c.Type)
	return old == nil || old.Reason != c.Reason
}

func drainedCondition(plan Plan) metav1.Condition {
	c := metav1.Condition{Type: nodeclaim.ConditionTypeDrained, Status: metav1.ConditionTrue, Reason: ReasonDrained}
	switch {
	case plan.GraceElapsed:
		c.Reason = nodeclaim.ReasonTerminationGracePeriodElapsed
		c.Message = "The termination deadline " + FormatDeadline(plan.Deadline) + " passed; pods left were deleted without grace"
	case !plan.Drained:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonDraining, waitingSummary(plan.Waiting)
	}
	return c
}

func volumesCondition(plan Plan) metav1.Condition {
	c := metav1.Condition{Type: nodeclaim.ConditionTypeVolumesDetached, Status: metav1.ConditionTrue, Reason: ReasonVolumesDetached}
	switch {
	case plan.GraceElapsed:
		c.Status, c.Reason = metav1.ConditionFalse, nodeclaim.ReasonTerminationGracePeriodElapsed
		c.Message = "The termination deadline " + FormatDeadline(plan.Deadline) + " passed; VolumeAttachments are no longer waited for"
	case len(plan.PendingVolumes) > 0:
		names := make([]string, len(plan.PendingVolumes))
		for i, va := range plan.PendingVolumes {
			names[i] = va.Name
		}
		c.Status, c.Reason = metav1.ConditionFalse, ReasonAwaitingVolumeDetachment
		c.Message = fmt.Sprintf("Awaiting deletion of %d VolumeAttachments bound to the node: %s", len(names), summarize(names))
	}
	return c
}

// waitingSummary counts the pods waited for by reason, in the plan's order:
// "waiting for 3 pods: 2 being evicted, 1 has karpenter.sh/do-not-disrupt".
func waitingSummary(waiting []PodState) string {
	var order []string
	count := map[string]int{}
	for _, w := range waiting {
		if count[w.Reason] == 0 {
			order = append(order, w.Reason)
		}
		count[w.Reason]++
	}
	parts := make([]string, len(order))
	for i, r := range order {
		parts[i] = fmt.Sprintf("%d %s", count[r], r)
	}
	return fmt.Sprintf("waiting for %s: %s", pods(len(waiting)), strings.Join(parts, ", "))
}

func pods(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return strconv.Itoa(n) + " pods"
}

// drainReason labels drained pods with the claim's disruption reason, as
// Karpenter does.
func drainReason(nc *karpv1.NodeClaim) string {
	if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	return "Forceful Termination"
}

// event records on the claim and, when there is one, its node.
func (c *Controller) event(nc *karpv1.NodeClaim, node *corev1.Node, typ, reason, msg string) {
	c.Recorder.Event(nc, typ, reason, msg)
	if node != nil {
		c.Recorder.Event(node, typ, reason, msg)
	}
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func nodeName(n *corev1.Node) string {
	if n == nil {
		return ""
	}
	return n.Name
}

// summarize lists a few items and counts the rest, to keep events short.
func summarize(items []string) string {
	const shown = 5
	if len(items) <= shown {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:shown], ", "), len(items)-shown)
}

package disruption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// DisruptingSinceAnnotation records when a replace command chose a claim.
const DisruptingSinceAnnotation = "nodewright.dev/disrupting-since"

// replacementGrace is how long a chosen claim's replacements may be missing
// from the cache before the choice is given up: the process may have died
// between recording the choice and creating them.
const replacementGrace = 30 * time.Second

// execute carries out one command. Deletes happen at once; replacements are
// recorded on the chosen claims first, then created, and the claims are
// deleted by progress once the replacements are initialized.
func (c *Controller) execute(ctx context.Context, cmd planner.Command, idx index, now time.Time) error {
	pools, claims, nodes := idx.pools, idx.claims, idx.nodes
	logger := log.FromContext(ctx)
	// Node repair is involuntary: Karpenter counts it apart from the
	// voluntary disruption decisions.
	if cmd.Reason != planner.ReasonUnhealthy {
		metrics.DisruptionDecision(string(cmd.Method), string(cmd.Reason), cmd.Pools)
	}
	if cmd.Method == planner.Delete {
		for i, name := range cmd.Claims {
			nc := claims[name]
			if nc == nil {
				continue
			}
			logger.Info("disrupting NodeClaim", "nodeclaim", name, "node", cmd.Nodes[i], "reason", cmd.Reason, "why", cmd.Message)
			if err := c.taint(ctx, nodes[cmd.Nodes[i]], true); err != nil {
				return err
			}
			if err := c.deleteClaim(ctx, nc, cmd.Reason, cmd.Message, cmd.Condition, now); err != nil {
				return err
			}
		}
		return nil
	}
	names := make([]string, len(cmd.Replacements))
	for i, r := range cmd.Replacements {
		names[i] = r.NodePool + "-" + utilrand.String(5)
	}
	for i, name := range cmd.Claims {
		nc := claims[name]
		if nc == nil {
			return fmt.Errorf("NodeClaim %s is gone", name)
		}
		before := nc.DeepCopy()
		after := nc.DeepCopy()
		if after.Annotations == nil {
			after.Annotations = map[string]string{}
		}
		after.Annotations[planner.DisruptingAnnotation] = string(cmd.Reason)
		after.Annotations[planner.ReplacementsAnnotation] = strings.Join(names, ",")
		after.Annotations[DisruptingSinceAnnotation] = now.UTC().Format(time.RFC3339)
		if cmd.Condition != "" {
			after.Annotations[planner.RepairConditionAnnotation] = cmd.Condition
		}
		if err := c.Client.Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("recording the disruption of NodeClaim %s: %w", name, err)
		}
		if err := c.taint(ctx, nodes[cmd.Nodes[i]], true); err != nil {
			return err
		}
		c.Recorder.Eventf(nc, corev1.EventTypeNormal, "DisruptionLaunching", "Launching %d replacement(s) for %s: %s",
			len(names), cmd.Reason, cmd.Message)
		c.noteStart(cmd.Pools[i], now)
	}
	for i, r := range cmd.Replacements {
		np := pools[r.NodePool]
		if np == nil {
			return fmt.Errorf("NodePool %s is gone", r.NodePool)
		}
		nc := provisioning.NodeClaimFor(np, r)
		nc.GenerateName, nc.Name = "", names[i]
		delete(nc.Annotations, snapshot.NominatedPodsAnnotation) // its pods are bound elsewhere
		if err := c.Client.Create(ctx, nc); err != nil {
			return fmt.Errorf("creating replacement NodeClaim %s: %w", nc.Name, err)
		}
		metrics.NodeClaimsCreated.WithLabelValues(strings.ToLower(string(cmd.Reason)), np.Name).Inc()
		c.Recorder.Eventf(nc, corev1.EventTypeNormal, "Created", "Replacement for %s (%s), instance types %s",
			strings.Join(cmd.Claims, ", "), cmd.Reason, typeList(r.InstanceTypes))
		logger.Info("launched replacement", "nodeclaim", nc.Name, "for", cmd.Claims, "reason", cmd.Reason, "savingsPerHour", cmd.Savings)
	}
	return nil
}

// progress finishes or gives up replace commands recorded on claims.
func (c *Controller) progress(ctx context.Context, cluster *snapshot.Cluster, idx index, now time.Time) error {
	byName, nodes := idx.claims, idx.nodes
	var errs []error
	for _, nc := range cluster.NodeClaims {
		reason := nc.Annotations[planner.DisruptingAnnotation]
		if reason == "" || nc.DeletionTimestamp != nil {
			continue
		}
		since, _ := time.Parse(time.RFC3339, nc.Annotations[DisruptingSinceAnnotation])
		ready, failed := true, ""
		for _, r := range strings.Split(nc.Annotations[planner.ReplacementsAnnotation], ",") {
			if r == "" {
				continue
			}
			rc := byName[r]
			switch {
			case rc == nil && now.Sub(since) > replacementGrace:
				failed = "replacement " + r + " is gone"
			case rc == nil, !meta.IsStatusConditionTrue(rc.Status.Conditions, karpv1.ConditionTypeInitialized):
				ready = false
			case rc.DeletionTimestamp != nil:
				failed = "replacement " + r + " is being deleted"
			}
		}
		if failed == "" && !ready && now.Sub(since) > c.Opts.ReplacementTimeout {
			failed = fmt.Sprintf("replacements did not initialize within %s", c.Opts.ReplacementTimeout)
		}
		switch {
		case failed != "":
			if err := c.abandon(ctx, nc, nodes[nc.Status.NodeName], failed); err != nil {
				errs = append(errs, err)
			}
		case ready:
			if err := c.deleteClaim(ctx, nc, karpv1.DisruptionReason(reason), "replacements initialized", nc.Annotations[planner.RepairConditionAnnotation], now); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// abandon gives up a replace command: the claim keeps its node and loses
// its mark and taint.
func (c *Controller) abandon(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node, why string) error {
	log.FromContext(ctx).Info("abandoning disruption", "nodeclaim", nc.Name, "why", why)
	c.Recorder.Eventf(nc, corev1.EventTypeWarning, "DisruptionAbandoned", "Keeping the node: %s", why)
	before := nc.DeepCopy()
	after := nc.DeepCopy()
	delete(after.Annotations, planner.DisruptingAnnotation)
	delete(after.Annotations, planner.ReplacementsAnnotation)
	delete(after.Annotations, DisruptingSinceAnnotation)
	delete(after.Annotations, planner.RepairConditionAnnotation)
	if err := c.Client.Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("abandoning the disruption of NodeClaim %s: %w", nc.Name, err)
	}
	return c.taint(ctx, node, false)
}

// deleteClaim records why a claim is disrupted and deletes it; the
// termination controller drains and removes the node. condition is, for
// node repair, the node condition that failed.
func (c *Controller) deleteClaim(ctx context.Context, nc *karpv1.NodeClaim, reason karpv1.DisruptionReason, msg, condition string, now time.Time) error {
	before := nc.DeepCopy()
	after := nc.DeepCopy()
	meta.SetStatusCondition(&after.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue,
		Reason: string(reason), Message: msg, LastTransitionTime: metav1.NewTime(now), ObservedGeneration: nc.Generation})
	if err := c.Client.Status().Patch(ctx, after, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("recording the disruption reason of NodeClaim %s: %w", nc.Name, err)
	}
	c.Recorder.Eventf(nc, corev1.EventTypeNormal, "DisruptionTerminating", "Disrupting NodeClaim: %s: %s", reason, msg)
	if err := c.Client.Delete(ctx, nc); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting NodeClaim %s: %w", nc.Name, err)
	}
	if nc.Annotations[planner.DisruptingAnnotation] == "" {
		c.noteStart(nc.Labels[karpv1.NodePoolLabelKey], now)
	}
	metrics.NodeClaimDisrupted(string(reason), nc)
	if reason == planner.ReasonUnhealthy {
		metrics.NodeClaimRepaired(condition, nc)
	}
	return nil
}

// taint adds or removes karpenter.sh/disrupted:NoSchedule on a node.
func (c *Controller) taint(ctx context.Context, n *corev1.Node, on bool) error {
	return setTaint(ctx, c.Client, n, karpv1.DisruptedNoScheduleTaint, on, time.Time{})
}

// setTaint adds or removes a taint (matched by key and effect), with an
// optimistic lock so a concurrent change is not overwritten.
func setTaint(ctx context.Context, cl client.Client, n *corev1.Node, t corev1.Taint, on bool, added time.Time) error {
	if n == nil {
		return nil
	}
	has := false
	var kept []corev1.Taint
	for _, x := range n.Spec.Taints {
		if x.Key == t.Key && x.Effect == t.Effect {
			has = true
			continue
		}
		kept = append(kept, x)
	}
	if has == on {
		return nil
	}
	before := n.DeepCopy()
	after := n.DeepCopy()
	if on {
		if !added.IsZero() {
			t.TimeAdded = &metav1.Time{Time: added}
		}
		after.Spec.Taints = append(after.Spec.Taints, t)
	} else {
		after.Spec.Taints = kept
	}
	if err := cl.Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s taint %s on node %s: %w", map[bool]string{true: "adding", false: "removing"}[on], t.Key, n.Name, err)
	}
	return nil
}

// typeList names the first few instance types, cheapest first.
func typeList(its []*instancetype.InstanceType) string {
	var names []string
	for i, it := range its {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(its)-5))
			break
		}
		names = append(names, it.Name)
	}
	return strings.Join(names, ", ")
}

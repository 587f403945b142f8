package nodeclaim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// settle brings the conditions that follow an initialized claim's state up
// to date in memory, for the caller to write: ConsistentStateFound (the node
// shape check) and Consolidatable. New inconsistencies are announced. It
// returns how long until Consolidatable changes by itself (0: never).
//
// Initialization calls it too, so a burst of new nodes writes both in the
// status patch that marks them initialized rather than in one more each.
func (c *Controller) settle(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) time.Duration {
	issues := shapeIssues(nc, node)
	c.announce(ctx, nc, issues)
	setOrRemove(nc, karpv1.ConditionTypeConsistentStateFound, consistentState(issues))
	np := &karpv1.NodePool{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: nc.Labels[karpv1.NodePoolLabelKey]}, np); err != nil {
		// Without its NodePool the claim's consolidateAfter is unknown:
		// Consolidatable stays as it was.
		return 0
	}
	cond, recheck := consolidatable(nc, np.Spec.Disruption.ConsolidateAfter.Duration, c.Now())
	setOrRemove(nc, karpv1.ConditionTypeConsolidatable, cond)
	return recheck
}

// steady keeps an initialized claim's Consolidatable and
// ConsistentStateFound current, writing only a change. Everything they
// depend on wakes the claim: its own updates (lastPodEventTime), its node's,
// and its NodePool's spec; the requeue is for consolidateAfter running out.
func (c *Controller) steady(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) (reconcile.Result, error) {
	before := nc.DeepCopy()
	recheck := c.settle(ctx, nc, node)
	if !equality.Semantic.DeepEqual(before.Status.Conditions, nc.Status.Conditions) {
		if err := c.patchStatus(ctx, before, nc); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: recheck}, nil
}

// checkDrain is the consistency check of a deleted claim whose node is
// still draining: from ConsistencyInterval after the deletion, and every
// interval after that, ConsistentStateFound says whether a
// PodDisruptionBudget blocks the drain. A drain normally ends well before;
// one that a PDB holds for that long needs a person. (Karpenter scans every
// claim every 10 minutes, so it first looks somewhere within that.)
func (c *Controller) checkDrain(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, error) {
	interval := c.Opts.ConsistencyInterval
	if interval <= 0 || nc.Status.ProviderID == "" {
		return reconcile.Result{}, nil
	}
	now := c.Now()
	if wait := c.scans.wait(nc.Name, nc.DeletionTimestamp.Time, interval, now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	c.scans.scanned(nc.Name, now)
	var nodes corev1.NodeList
	if err := c.Client.List(ctx, &nodes, client.MatchingFields{ProviderIDField: nc.Status.ProviderID}); err != nil {
		return reconcile.Result{}, fmt.Errorf("finding node of %s: %w", nc.Status.ProviderID, err)
	}
	if len(nodes.Items) == 0 {
		return reconcile.Result{}, nil // nothing left to drain
	}
	node := &nodes.Items[0]
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.MatchingFields{PodNodeNameField: node.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing pods of node %s: %w", node.Name, err)
	}
	var pdbs policyv1.PodDisruptionBudgetList
	if err := c.Client.List(ctx, &pdbs); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	podPtrs := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		podPtrs[i] = &pods.Items[i]
	}
	pdbPtrs := make([]*policyv1.PodDisruptionBudget, len(pdbs.Items))
	for i := range pdbs.Items {
		pdbPtrs[i] = &pdbs.Items[i]
	}
	issues := drainIssues(nc, node, podPtrs, pdbPtrs, now)
	before := nc.DeepCopy()
	c.announce(ctx, nc, issues)
	if setOrRemove(nc, karpv1.ConditionTypeConsistentStateFound, consistentState(issues)) {
		if err := c.patchStatus(ctx, before, nc); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: interval}, nil
}

// announce logs and records, as a warning event on the claim, each issue
// its condition does not name yet.
func (c *Controller) announce(ctx context.Context, nc *karpv1.NodeClaim, issues []string) {
	for _, issue := range newIssues(nc, issues) {
		log.FromContext(ctx).Error(errors.New(issue), "consistency check failed")
		c.Recorder.Event(nc, corev1.EventTypeWarning, EventFailedConsistencyCheck, issue)
	}
}

// scans remembers when each deleted claim's drain was last checked.
type scans struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// wait is how long until the claim deleted at deleted is due a check.
func (s *scans) wait(name string, deleted time.Time, interval time.Duration, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	due := deleted.Add(interval)
	if last, ok := s.last[name]; ok && last.Add(interval).After(due) {
		due = last.Add(interval)
	}
	return due.Sub(now)
}

func (s *scans) scanned(name string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[string]time.Time{}
	}
	s.last[name] = now
}

func (s *scans) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.last, name)
}

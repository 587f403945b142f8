package simulate

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	ctrldisruption "github.com/nodewright/nodewright/internal/controller/disruption"
	"github.com/nodewright/nodewright/internal/disruption/drift"
	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/disruption/protect"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// replacementTimeout gives up a replacement that has not initialized by
// then, as the controller does.
var replacementTimeout = ctrldisruption.DefaultOptions().ReplacementTimeout

// validationDelay holds consolidation back as the controller does.
var validationDelay = ctrldisruption.DefaultOptions().ValidationDelay

// disruptionLoop is one loop of the disruption controller: finish or give
// up replacements, decide with the planner, and carry out its commands and
// attrition taints.
func (e *Engine) disruptionLoop() {
	e.progressReplacements()
	if !e.disruptChanged && e.now.Before(e.quietUntil) {
		return // nothing changed, and no deadline passed: the plan would be the same
	}
	e.disruptChanged = false
	e.resolveTypes()
	cloudDrift := map[string]string{}
	for _, nc := range e.claims {
		if nc.DeletionTimestamp != nil || !drift.Eligible(nc) {
			continue
		}
		if r, _ := e.cloud.IsDrifted(context.Background(), nc); r != "" {
			cloudDrift[nc.Name] = r
		}
	}
	wall := time.Now()
	plan := planner.Decide(planner.Input{Cluster: e.cluster(), PDBs: e.pdbs, PoolTypes: e.poolTypes, CloudDrift: cloudDrift,
		Started: e.recentStarts(), Now: e.now, SingleNodeCursor: e.cursor, Requests: e.solveMemo,
		Options: planner.Options{MultiNodeMax: planner.DefaultOptions().MultiNodeMax, NominationGrace: time.Minute,
			SingleNodeSimulations: planner.DefaultOptions().SingleNodeSimulations}})
	e.rec.decideTime += time.Since(wall)
	e.rec.decides++
	act, wait, proposals := planner.Validate(plan.Commands, plan.HeldByBudget, e.proposals, e.now, validationDelay)
	e.proposals = proposals
	if len(wait) == 0 {
		e.cursor = plan.NextSingleNodeCursor
	}
	for _, cmd := range act {
		e.execute(cmd)
	}
	e.attrition(plan)
	e.quietUntil = e.wakeAfter(plan)
}

// execute carries out a command as the controller does: a delete drains
// and removes the nodes now; a replace launches the replacements and
// removes the nodes once they are initialized.
func (e *Engine) execute(cmd planner.Command) {
	if cmd.Method == planner.Delete {
		for _, name := range cmd.Claims {
			if nc := e.claim(name); nc != nil && nc.DeletionTimestamp == nil {
				e.noteStart(nc.Labels[karpv1.NodePoolLabelKey])
				e.terminate(nc, string(cmd.Reason), cmd.Message)
			}
		}
		return
	}
	var names []string
	for _, r := range cmd.Replacements {
		nc := e.launch(r, false, "replacement ("+string(cmd.Reason)+")")
		if nc == nil {
			return // nothing to wait for: the nodes are kept, as when a create fails
		}
		names = append(names, nc.Name)
	}
	for i, name := range cmd.Claims {
		nc := e.claim(name)
		if nc == nil {
			continue
		}
		nc.Annotations[planner.DisruptingAnnotation] = string(cmd.Reason)
		nc.Annotations[planner.ReplacementsAnnotation] = strings.Join(names, ",")
		nc.Annotations[ctrldisruption.DisruptingSinceAnnotation] = e.now.UTC().Format(time.RFC3339)
		e.setTaint(e.nodeByName[cmd.Nodes[i]], karpv1.DisruptedNoScheduleTaint, true)
		e.noteStart(cmd.Pools[i])
	}
	e.rec.event(e.now.Sub(e.start), string(cmd.Reason), "replacing "+strings.Join(cmd.Claims, ", ")+": "+cmd.Message)
}

// progressReplacements removes nodes whose replacements are initialized,
// and keeps those whose replacements failed or took too long.
func (e *Engine) progressReplacements() {
	for _, nc := range e.claims {
		reason := nc.Annotations[planner.DisruptingAnnotation]
		if reason == "" || nc.DeletionTimestamp != nil {
			continue
		}
		since, _ := time.Parse(time.RFC3339, nc.Annotations[ctrldisruption.DisruptingSinceAnnotation])
		ready, failed := true, false
		for _, r := range strings.Split(nc.Annotations[planner.ReplacementsAnnotation], ",") {
			if r == "" {
				continue
			}
			rc := e.claim(r)
			switch {
			case rc == nil || rc.DeletionTimestamp != nil:
				failed = true
			case !meta.IsStatusConditionTrue(rc.Status.Conditions, karpv1.ConditionTypeInitialized):
				ready = false
			}
		}
		if !failed && !ready && e.now.Sub(since) > replacementTimeout {
			failed = true
		}
		switch {
		case failed:
			delete(nc.Annotations, planner.DisruptingAnnotation)
			delete(nc.Annotations, planner.ReplacementsAnnotation)
			delete(nc.Annotations, ctrldisruption.DisruptingSinceAnnotation)
			e.setTaint(e.nodeByName[nc.Status.NodeName], karpv1.DisruptedNoScheduleTaint, false)
			e.rec.event(e.now.Sub(e.start), "Abandoned", "kept "+nc.Name+": its replacements did not come up")
			e.disruptChanged = true
		case ready:
			e.terminate(nc, reason, "replacements initialized")
		}
	}
}

// terminate starts deleting a claim: its node is tainted and drained, and
// it goes once drained.
func (e *Engine) terminate(nc *karpv1.NodeClaim, reason, msg string) {
	now := metav1.NewTime(e.now)
	nc.DeletionTimestamp = &now
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDisruptionReason,
		Status: metav1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: now})
	st := e.claimState[nc.Name]
	st.deletedReason = reason
	if tgp := nc.Spec.TerminationGracePeriod; tgp != nil {
		st.drainDeadline = e.now.Add(tgp.Duration)
	}
	e.setTaint(e.nodeByName[nc.Status.NodeName], karpv1.DisruptedNoScheduleTaint, true)
	e.rec.disrupted(e, nc, reason, msg)
	e.provisionChanged, e.disruptChanged = true, true
}

// drain is the termination controller: it evicts what it may from nodes
// of deleting claims (their pods become pending, as their controllers
// replace them), forces the rest off at the terminationGracePeriod, and
// removes a node with nothing left to drain.
func (e *Engine) drain() {
	var deleting []*karpv1.NodeClaim // in name order, so removals are too
	byNode := map[string]*karpv1.NodeClaim{}
	for _, nc := range e.claims {
		if nc.DeletionTimestamp != nil {
			deleting = append(deleting, nc)
			if nc.Status.NodeName != "" {
				byNode[nc.Status.NodeName] = nc
			}
		}
	}
	if len(deleting) == 0 {
		return
	}
	left := map[string]int{}
	var daemons []*corev1.Pod
	for _, p := range e.pods {
		nc := byNode[p.Spec.NodeName]
		if nc == nil || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		if snapshot.IsDaemonSetPod(p) || protect.Mirror(p) {
			daemons = append(daemons, p)
			continue
		}
		st := e.claimState[nc.Name]
		forced := !st.drainDeadline.IsZero() && !e.now.Before(st.drainDeadline)
		if protect.Evictable(p, e.now) || forced {
			e.unbind(p)
			e.rec.evicted++
			continue
		}
		left[p.Spec.NodeName]++
	}
	for _, nc := range deleting {
		node := nc.Status.NodeName
		if node != "" && left[node] > 0 {
			continue
		}
		for _, p := range daemons {
			if node != "" && p.Spec.NodeName == node {
				e.remove(p)
			}
		}
		e.removeClaim(nc)
	}
}

// removeClaim deletes a drained claim and its node.
func (e *Engine) removeClaim(nc *karpv1.NodeClaim) {
	if n := e.nodeByName[nc.Status.NodeName]; n != nil && nc.Status.NodeName != "" {
		delete(e.nodeByName, n.Name)
		for i, x := range e.nodes {
			if x == n {
				e.nodes = append(e.nodes[:i], e.nodes[i+1:]...)
				break
			}
		}
	}
	for i, x := range e.claims {
		if x == nc {
			e.claims = append(e.claims[:i], e.claims[i+1:]...)
			break
		}
	}
	e.rec.removed(e, nc)
	delete(e.claimState, nc.Name)
	e.provisionChanged, e.disruptChanged = true, true
}

// attrition puts the attrition taint on the plan's nodes and takes it off
// the others, but for the nodes a command of this loop took, as the
// controller does: a drained node whose deletion waits for validation
// keeps its taint, so it takes no new pods meanwhile.
func (e *Engine) attrition(plan *planner.Plan) {
	want := map[string]bool{}
	for _, a := range plan.Attrition {
		want[a.Node] = true
	}
	taken := map[string]bool{}
	for _, cmd := range plan.Commands {
		for _, n := range cmd.Nodes {
			taken[n] = true
		}
	}
	for _, n := range e.nodes {
		if taken[n.Name] {
			continue
		}
		had := hasTaint(n.Spec.Taints, planner.AttritionTaint)
		if want[n.Name] != had {
			e.setTaint(n, planner.AttritionTaint, want[n.Name])
			if want[n.Name] {
				e.rec.event(e.now.Sub(e.start), "Attrition", n.Name+" drains by attrition")
			}
		}
	}
}

// setTaint adds or removes a taint, stamping when it was added.
func (e *Engine) setTaint(n *corev1.Node, t corev1.Taint, on bool) {
	if n == nil || hasTaint(n.Spec.Taints, t) == on {
		return
	}
	if on {
		t.TimeAdded = &metav1.Time{Time: e.now}
		n.Spec.Taints = append(n.Spec.Taints, t)
	} else {
		var kept []corev1.Taint
		for _, x := range n.Spec.Taints {
			if x.Key != t.Key || x.Effect != t.Effect {
				kept = append(kept, x)
			}
		}
		n.Spec.Taints = kept
	}
	e.provisionChanged, e.disruptChanged, e.scheduleChanged = true, true, true
}

func (e *Engine) noteStart(pool string) { e.started[pool] = append(e.started[pool], e.now) }

// recentStarts are the disruption starts of the last day, for rate budgets.
func (e *Engine) recentStarts() map[string][]time.Time {
	out := map[string][]time.Time{}
	for pool, ts := range e.started {
		var keep []time.Time
		for _, t := range ts {
			if e.now.Sub(t) < 24*time.Hour {
				keep = append(keep, t)
			}
		}
		e.started[pool] = keep
		out[pool] = keep
	}
	return out
}

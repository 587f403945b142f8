package simulate

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// provisionLoop is the provisioner: when the batch window closes (a
// second without new pending pods, or ten seconds after it opened), or
// when something changed that could let waiting pods be placed, it plans
// the pending pods with the solver, launches the new NodeClaims and
// nominates the pods it put on in-flight ones. Binding is scheduleLoop's.
func (e *Engine) provisionLoop() error {
	opts := provisioning.DefaultOptions()
	if e.batchOpen {
		if e.now.Sub(e.lastTrigger) < opts.BatchIdle && e.now.Sub(e.batchStart) < opts.BatchMax {
			return nil
		}
		e.batchOpen = false
	} else if !e.provisionChanged {
		return nil
	}
	e.provisionChanged = false
	e.resolveTypes()
	// Every pending pod was tried by scheduleLoop and marked
	// unschedulable, as kube-scheduler would have.
	res := snapshot.Build(e.cluster(), e.poolTypes, snapshot.Options{Now: e.now, NominationGrace: opts.NominationGrace})
	if len(res.Input.Pods) == 0 {
		e.unschedulable = nil
		return nil
	}
	wall := time.Now()
	plan, err := solver.Solve(res.Input)
	var reclaimed map[string]bool
	if err == nil {
		plan, reclaimed, err = planner.ReclaimAttrition(res.Input, plan)
	}
	e.rec.solveTime += time.Since(wall)
	e.rec.solves++
	if err != nil {
		return fmt.Errorf("at %s: planning %d pending pods: %w", e.now.Sub(e.start), len(res.Input.Pods), err)
	}
	for _, n := range e.nodes {
		if reclaimed[n.Name] {
			e.setTaint(n, planner.AttritionTaint, false)
			e.rec.event(e.now.Sub(e.start), "AttritionStopped", n.Name+" takes pods again: pending pods need its room")
		}
	}
	e.unschedulable = plan.Unschedulable
	launched := make([]string, len(plan.NewClaims))
	for i, c := range plan.NewClaims {
		if nc := e.launch(c, true, "provisioning"); nc != nil {
			launched[i] = nc.Name
		}
	}
	nominate := map[string][]types.UID{}
	for _, pl := range plan.Placements {
		if pl.Node == "" {
			continue
		}
		name := pl.Node
		if claim := res.ClaimOf[name]; claim != "" {
			if nc := e.claim(claim); nc != nil && !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
				nominate[claim] = append(nominate[claim], pl.Pod.UID)
				continue
			}
		}
		// A pod planned onto a running node is left to kube-scheduler
		// (scheduleLoop), which tried it already and binds it when a
		// change lets it fit: the plan says there is room, not where the
		// scheduler puts it.
	}
	for claim, uids := range nominate {
		nc := e.claim(claim)
		uids = append(uids, snapshot.Nominations(nc.Annotations[snapshot.NominatedPodsAnnotation])...)
		nc.Annotations[snapshot.NominatedPodsAnnotation] = snapshot.EncodeNominations(uids)
	}
	return nil
}

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
// the pending pods with the solver, launches the new NodeClaims, binds
// pods the plan put on running nodes and nominates those it put on
// in-flight ones.
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
	// Every pending pod is marked unschedulable by the stand-in scheduler,
	// so the provisioner need not wait for kube-scheduler to try it.
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
		if e.nodeByName[name] != nil {
			e.bind(pl.Pod, name)
		}
	}
	for claim, uids := range nominate {
		nc := e.claim(claim)
		uids = append(uids, snapshot.Nominations(nc.Annotations[snapshot.NominatedPodsAnnotation])...)
		nc.Annotations[snapshot.NominatedPodsAnnotation] = snapshot.EncodeNominations(uids)
	}
	return nil
}

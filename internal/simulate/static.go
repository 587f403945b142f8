package simulate

import (
	"fmt"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/disruption/planner"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/static"
)

// staticLoop is the static NodePool controller: each static NodePool is
// kept at spec.replicas, with the controller's own decisions.
func (e *Engine) staticLoop() {
	for _, np := range e.pools {
		if !static.Is(np) {
			continue
		}
		var claims []*karpv1.NodeClaim
		for _, nc := range e.claims {
			if nc.Labels[karpv1.NodePoolLabelKey] == np.Name {
				claims = append(claims, nc)
			}
		}
		in := static.Input{NodePool: np, Claims: claims, Replacing: planner.Replacing(claims)}
		d := static.Decide(in)
		if len(d.Delete) > 0 {
			in.Pods = e.workloadPods()
			d = static.Decide(in)
		}
		if d.Create > 0 {
			e.resolveTypes()
			pool, err := snapshot.SolverPool(np, e.poolTypes, nil)
			if err == nil {
				shape, serr := static.NewClaim(pool, e.daemonSets)
				for i := 0; serr == nil && i < d.Create; i++ {
					e.launch(shape, false, "static")
				}
				err = serr
			}
			if err != nil && !e.staticWarned[np.Name] {
				e.rec.warn(fmt.Sprintf("static NodePool %s: %v", np.Name, err))
				e.staticWarned[np.Name] = true
			}
		}
		for _, name := range d.Delete {
			if nc := e.claim(name); nc != nil {
				e.terminate(nc, "ScaledDown", fmt.Sprintf("static NodePool %s scaled to %d replicas", np.Name, *np.Spec.Replicas))
			}
		}
	}
}

// workloadPods counts the pods that would have to move off each node.
func (e *Engine) workloadPods() map[string]int {
	out := map[string]int{}
	for _, p := range e.pods {
		if snapshot.Bound(p) && snapshot.MustMove(p) {
			out[p.Spec.NodeName]++
		}
	}
	return out
}

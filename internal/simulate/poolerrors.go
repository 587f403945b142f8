package simulate

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/solver"
)

// checkPools resolves the NodePools' instance types once before the run.
// A NodePool whose NodeClass cannot launch anything offline (an
// EC2NodeClass whose subnets are in zones the AWS catalog lacks, most
// often a dump of another region than --region's) is left out of every
// solve, and its pods would pend with no word of it: each such NodePool is
// a warning, and when none is left that can launch, the run is refused, as
// the loader refuses an input with no usable NodePool, rather than print
// a plan of 0 nodes.
func (e *Engine) checkPools() error {
	e.resolveTypes()
	if len(e.poolErrs) == 0 {
		return nil
	}
	problems := poolProblems(e.poolErrs)
	live := 0
	for _, np := range e.pools {
		if np.DeletionTimestamp == nil {
			live++
		}
	}
	if len(e.poolErrs) == live {
		return fmt.Errorf("no NodePool can launch a node, so every pending pod would stay pending: %s", strings.Join(problems, "; "))
	}
	for _, p := range problems {
		e.rec.warn(p)
	}
	return nil
}

// poolProblems says which NodePools launch nothing and why, one line per
// cause: NodePools sharing a NodeClass share its error, said once.
func poolProblems(errs map[string]error) []string {
	byCause := map[string][]string{}
	for name, err := range errs {
		cause := poolCause(err).Error()
		byCause[cause] = append(byCause[cause], name)
	}
	out := make([]string, 0, len(byCause))
	for cause, pools := range byCause {
		sort.Strings(pools)
		if len(pools) == 1 {
			out = append(out, fmt.Sprintf("NodePool %s launches nothing: %s", pools[0], cause))
		} else {
			out = append(out, fmt.Sprintf("NodePools %s launch nothing: %s", strings.Join(pools, ", "), cause))
		}
	}
	sort.Strings(out)
	return out
}

// poolCause is the provider's error under ResolveTypes's "listing instance
// types for NodePool X" wrapping, which the NodePool's name already says.
func poolCause(err error) error {
	if inner := errors.Unwrap(err); inner != nil {
		return inner
	}
	return err
}

// withPoolErrors is a pod's reason with the NodePools that launch nothing
// added: the solver never saw them, so its reason leaves them out, and a
// pod whose every NodePool is broken would read "no NodePool". The summary
// names each with a short cause ("NodeClass default is not ready"); the
// NodePool's line below it has the whole error.
func withPoolErrors(r *solver.Reason, errs map[string]error) string {
	rest, ok := strings.CutPrefix(r.Summary, "unschedulable: ")
	if len(errs) == 0 || !ok {
		return r.String()
	}
	var parts []string
	noPool := false
	for _, part := range strings.Split(rest, "; ") {
		if part == "no NodePool" {
			noPool = true
			continue
		}
		parts = append(parts, part)
	}
	if !noPool && len(r.NodePools) == 0 {
		// Blocked before any NodePool was looked at.
		return r.String()
	}
	out := *r
	out.NodePools = append([]solver.PoolReason(nil), r.NodePools...)
	names := make([]string, 0, len(errs))
	for name := range errs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		cause := poolCause(errs[name])
		short := cause.Error()
		var notReady *cloudprovider.NodeClassNotReadyError
		if errors.As(cause, &notReady) && notReady.NodeClass != "" {
			short = "NodeClass " + notReady.NodeClass + " is not ready"
		}
		parts = append(parts, fmt.Sprintf("NodePool %s: launches nothing: %s", name, short))
		out.NodePools = append(out.NodePools, solver.PoolReason{NodePool: name, Reason: "launches nothing: " + cause.Error()})
	}
	out.Summary = "unschedulable: " + strings.Join(parts, "; ")
	return out.String()
}

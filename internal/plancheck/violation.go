package plancheck

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Violation is one thing kube-scheduler (or the provider, or the NodePool)
// would refuse in a plan.
type Violation struct {
	// Pod is namespace/name, or empty when the violation is not about a pod.
	Pod string
	// Node is the node's name, or a new claim's hostname; may be empty.
	Node string
	// Constraint is a short identifier: "resources", "taints",
	// "node-affinity", "host-ports", "volume", "pod-affinity",
	// "pod-anti-affinity", "topology-spread", "plan", "limits",
	// "completeness" (an unschedulable pod that fits), "truncated".
	Constraint string
	// Detail says what is wrong, with the numbers.
	Detail string
}

// String reads "[topology-spread] pod default/web-1 on node n-1: ...".
func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s]", v.Constraint)
	if v.Pod != "" {
		fmt.Fprintf(&b, " pod %s", v.Pod)
	}
	if v.Node != "" {
		if v.Pod != "" {
			b.WriteString(" on")
		}
		fmt.Fprintf(&b, " node %s", v.Node)
	}
	if v.Pod != "" || v.Node != "" {
		b.WriteString(":")
	}
	b.WriteString(" ")
	b.WriteString(v.Detail)
	return b.String()
}

// maxViolations caps the report: a badly broken plan of 20,000 pods would
// otherwise produce a report nobody reads. The last entry says how many more
// there were.
const maxViolations = 1000

// finish sorts violations so that the same plan always gives the same report,
// and caps them. Sorting by constraint first groups the report by kind of
// mistake, which is how people read it.
func finish(vs []Violation) []Violation {
	if len(vs) == 0 {
		return nil
	}
	slices.SortStableFunc(vs, func(a, b Violation) int {
		return cmp.Or(
			cmp.Compare(a.Constraint, b.Constraint),
			cmp.Compare(a.Pod, b.Pod),
			cmp.Compare(a.Node, b.Node),
			cmp.Compare(a.Detail, b.Detail),
		)
	})
	if len(vs) > maxViolations {
		dropped := len(vs) - (maxViolations - 1)
		vs = append(vs[:maxViolations-1:maxViolations-1], Violation{
			Constraint: "truncated",
			Detail:     fmt.Sprintf("%d more violations dropped (report capped at %d entries)", dropped, maxViolations),
		})
	}
	return vs
}

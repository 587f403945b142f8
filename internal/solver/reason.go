package solver

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/internal/instancetype"
)

// Reason explains why a pod could be placed nowhere: on no existing node, and
// on no new node of any NodePool, per NodePool and per instance type.
type Reason struct {
	// Summary is one line for events and logs.
	Summary string
	// Existing counts the reasons existing and in-flight nodes refused the pod.
	Existing []NodeCount
	// NodePools says why each NodePool could not launch a node for the pod.
	NodePools []PoolReason
}

// NodeCount is how many nodes refused a pod for one reason, with an example.
type NodeCount struct {
	Reason  string
	Nodes   int
	Example string
}

// PoolReason is why one NodePool could not launch a node for a pod. Reason is
// set when the whole pool is out (a taint, a requirement, a limit); otherwise
// InstanceTypes says why each type was rejected.
type PoolReason struct {
	NodePool      string
	Reason        string
	InstanceTypes []TypeReason
}

// TypeReason is why one instance type cannot hold a pod, or, with Fits,
// that it can (ExplainPod reports those too).
type TypeReason struct {
	InstanceType string
	Reason       string
	// Fits says the type holds the pod alone: its requirements, offerings,
	// resources and the NodePool's limits all allow it.
	Fits bool
	// For a resource shortfall, or for a type that fits its tightest
	// resource: the resource, the allocatable arithmetic and what the pod
	// (with DaemonSet overhead) needs, split into the two.
	Resource   corev1.ResourceName
	Arithmetic *instancetype.Arithmetic
	Needed     resource.Quantity
	Pod        resource.Quantity
	DaemonSets resource.Quantity
}

// String is the whole explanation, one line per NodePool and instance type.
func (r *Reason) String() string {
	var b strings.Builder
	b.WriteString(r.Summary)
	for _, e := range r.Existing {
		fmt.Fprintf(&b, "\n  %d existing node(s): %s (e.g. %s)", e.Nodes, e.Reason, e.Example)
	}
	for _, p := range r.NodePools {
		if p.Reason != "" {
			fmt.Fprintf(&b, "\n  NodePool %s: %s", p.NodePool, p.Reason)
			continue
		}
		fmt.Fprintf(&b, "\n  NodePool %s:", p.NodePool)
		for _, t := range p.InstanceTypes {
			fmt.Fprintf(&b, "\n    %s: %s", t.InstanceType, t.Reason)
		}
	}
	return b.String()
}

// shortfall writes "memory: 262144Mi - ... = 239554Mi < 245760Mi".
func shortfall(a instancetype.Arithmetic, needed resource.Quantity) string {
	return fmt.Sprintf("%s: %s < %s", a.Resource, a.String(), instancetype.Format(a.Resource, needed))
}

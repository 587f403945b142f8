package plancheck

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/solver"
)

// Check replays a plan the way kube-scheduler would bind it and returns every
// violation found (nil when none), sorted, at most maxViolations of them.
//
// It first builds the final node set (existing nodes, and one node per new
// claim as the provider would launch it, DaemonSet pods included), then checks
// the plan's structure, then binds plan.Placements in order, checking each pod
// against the pods bound before it, as kube-scheduler checks a pod against
// the cluster as it is when the pod's turn comes. Last, it tries each pod the
// plan lists as unschedulable against the cluster the plan leaves and against
// a fresh node of every NodePool, and reports the pods that fit.
func Check(in *solver.Input, plan *solver.Plan) []Violation {
	if in == nil || plan == nil {
		return []Violation{{Constraint: "plan", Detail: "nil input or plan"}}
	}
	ck := newChecker(in, plan)
	ck.buildNodes()
	ck.checkStructure()
	ck.checkLimits()
	ck.replay()
	ck.checkCompleteness()
	return finish(ck.violations)
}

// checker is one Check in progress.
type checker struct {
	in   *solver.Input
	plan *solver.Plan

	pools map[string]*solver.NodePool
	// nsLabels are the namespaces' labels, for namespaceSelectors.
	nsLabels map[string]labels.Set
	// nodes are all nodes, existing first (input order), then one per claim.
	nodes  []*node
	byName map[string]*node
	// claims[i] is the node of plan.NewClaims[i], nil for a nil claim.
	claims []*node
	// targets[i] is where plan.Placements[i] binds, nil when the placement is
	// malformed (reported by checkStructure).
	targets []*node
	// onClaim[i] are the pods placed onto claim i, in placement order.
	onClaim [][]*corev1.Pod

	// caches for the claim checks
	poolTypes map[string]map[string]bool
	allocs    map[*instancetype.InstanceType]corev1.ResourceList

	index      *podIndex
	volumes    *volumeIndex
	violations []Violation
}

func newChecker(in *solver.Input, plan *solver.Plan) *checker {
	ck := &checker{
		in:       in,
		plan:     plan,
		pools:    map[string]*solver.NodePool{},
		nsLabels: map[string]labels.Set{},
		byName:   map[string]*node{},
		volumes:  newVolumeIndex(in.Volumes),

		poolTypes: map[string]map[string]bool{},
		allocs:    map[*instancetype.InstanceType]corev1.ResourceList{},
	}
	for i := range in.NodePools {
		ck.pools[in.NodePools[i].Name] = &in.NodePools[i]
	}
	for _, ns := range in.Namespaces {
		if ns != nil {
			ck.nsLabels[ns.Name] = labels.Set(ns.Labels)
		}
	}
	ck.index = newPodIndex(ck)
	return ck
}

// report records a violation about pod (nil for none) on node ("" for none).
func (ck *checker) report(pod *corev1.Pod, node, constraint, detail string) {
	ck.violations = append(ck.violations, Violation{Pod: podKey(pod), Node: node, Constraint: constraint, Detail: detail})
}

// podKey is namespace/name, "" for a nil pod.
func podKey(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	return p.Namespace + "/" + p.Name
}

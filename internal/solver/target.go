package solver

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// pool is a NodePool compiled for the solve.
type pool struct {
	idx    int
	np     *NodePool
	reqs   scheduling.Requirements
	taints []corev1.Taint
	types  []*itype // cheapest first
	// remaining capacity under the limits, and which resources are limited.
	remaining      vec
	limited        [maxResources]bool
	remainingNodes int64 // meaningful when nodesLimited
	nodesLimited   bool
	minValues      []minValue
	// provided are the label keys a new node of the pool has: the pool's
	// requirements and labels, and what its instance types define.
	provided map[string]bool
	// whyNoTypes caches whyNoTypes's answer when types is empty: every pod
	// that fails asks, and the answer is the pool's alone.
	whyNoTypes string
}

type minValue struct {
	key string
	min int
}

// itype is an instance type compiled for a pool.
type itype struct {
	idx      int // position in pool.types
	it       *instancetype.InstanceType
	alloc    vec
	capacity vec
	minPrice float64 // cheapest available offering the pool allows
	// zonePrice is the cheapest available offering per zone the pool allows.
	zonePrice map[string]float64
}

// target is somewhere a pod can go: an existing or in-flight node, or a new
// NodeClaim the plan is building (a bin).
type target struct {
	existing bool
	name     string // node name, or the bin's placeholder hostname
	pool     *pool  // nil for nodes nodewright does not manage
	labels   map[string]string
	// reqs: a bin's requirements, narrowed as pods join; for a node, its labels.
	reqs     scheduling.Requirements
	taints   []corev1.Taint
	used     vec
	avail    vec // node: allocatable; bin: the largest allocatable among types
	types    []*itype
	prices   []float64 // prices[i] is types[i]'s cheapest allowed offering
	ports    []hostPort
	pods     []*corev1.Pod
	claim    int
	deleting bool
	daemon   vec
	// eligible caches binEligible per spread group with a node filter.
	eligible map[*topoGroup]bool
	// daemonPods run on a new node; they count for topology.
	daemonPods []*daemon
	// offersNarrowed: a pod narrowed the zone or capacity type beyond the
	// pool's, so zonePrice no longer prices this bin.
	offersNarrowed bool
	// domains caches domainValues per key; reset when reqs narrow.
	domains map[string][]string
	// reserved is the capacity counted against the pool's limits: that of
	// the bin's cheapest type.
	reserved vec
	// aim is the type a bin was opened for (see chooseAim): until its pods
	// outgrow it, the plan counts the bin at the aim's price, so filling it
	// up to the aim costs nothing more. Nil when the bin has none.
	aim    *itype
	aimIdx int // the aim's index in types
	// aimShort: the aim holds more pods of the group it was opened for
	// than were left to place (chooseAim).
	aimShort bool
	// owner is the group of every pod on a bin; nil once pods of two
	// groups share it.
	owner *group
}

// price is the bin's current hourly price as the solve counts it: its
// cheapest type that holds its pods, or its aim when that costs more.
func (t *target) price() float64 {
	if len(t.prices) == 0 {
		return 0
	}
	if t.aim != nil {
		return max(t.prices[t.aimIdx], t.prices[0])
	}
	return t.prices[0]
}

// domain returns the target's values for a topology key: one for nodes and
// hostnames, possibly several for a bin whose zone is still open, none when a
// node would not carry the label.
func (t *target) domainValues(key string) (vals []string, open bool) {
	if key == corev1.LabelHostname {
		return []string{t.name}, false
	}
	if t.existing {
		if v, ok := t.labels[key]; ok {
			return []string{v}, false
		}
		return nil, false
	}
	if vs, ok := t.domains[key]; ok {
		return vs, len(vs) > 1
	}
	var vs []string
	if r, ok := t.reqs[key]; ok && !r.Complement() {
		vs = r.Values()
	}
	if t.domains == nil {
		t.domains = map[string][]string{}
	}
	t.domains[key] = vs
	return vs, len(vs) > 1
}

// refusal says why a target cannot take a pod; monotone refusals never lift
// for pods of the same group, so the group's cursor may skip the target.
type refusal struct {
	reason   string
	monotone bool
}

func (r *refusal) Error() string { return r.reason }

var (
	refDeleting = &refusal{"node is being deleted", true}
	refPorts    = &refusal{"host port already in use", true}
	// Topology refusals on the hot path; explain() says which constraint.
	refTopo      = &refusal{"topology constraint", false}
	refMinValues = &refusal{"would leave fewer instance type choices than minValues", true}
	refTopoFinal = &refusal{"topology constraint", true}
)

// tolerates reports whether tolerations cover every NoSchedule and NoExecute
// taint (and PreferNoSchedule when strict, as the solver treats preferences as
// requirements until relaxed).
func tolerates(tols []corev1.Toleration, taints []corev1.Taint, strict bool) (bool, *corev1.Taint) {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule && !strict {
			continue
		}
		ok := false
		for j := range tols {
			if tols[j].ToleratesTaint(t) {
				ok = true
				break
			}
		}
		if !ok {
			return false, t
		}
	}
	return true, nil
}

func portsConflict(have, want []hostPort) bool {
	for _, w := range want {
		for _, h := range have {
			if w.conflicts(h) {
				return true
			}
		}
	}
	return false
}

func taintString(t *corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}

package solver

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Requests remembers what the solver reads off each pod's containers: its
// summed requests and its host ports. Summing one pod's requests
// (component-helpers' PodRequests, over its containers, init containers and
// overhead) costs more than any other step of compiling a solve, and a
// caller that solves many times over the same cluster (the disruption
// planner's simulations, hundreds a loop) reads the same bound pods every
// time; with one Requests shared by those solves each pod is read once.
//
// A pod is known by its UID, so a copy (a bound pod made pending for a
// simulation) finds its original's; a pod without a UID by its object.
// Requests assumes a pod's containers do not change while it is in use:
// give it the lifetime of one snapshot, or Forget a pod that changes or
// goes. Safe for concurrent use; a nil *Requests reads every time.
type Requests struct {
	mu    sync.Mutex
	byUID map[types.UID]podFacts
	byPod map[*corev1.Pod]podFacts
}

type podFacts struct {
	requests corev1.ResourceList
	ports    []hostPort
}

// NewRequests returns an empty memo.
func NewRequests() *Requests {
	return &Requests{byUID: map[types.UID]podFacts{}, byPod: map[*corev1.Pod]podFacts{}}
}

// Forget drops what is remembered of p.
func (r *Requests) Forget(p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byUID, p.UID)
	delete(r.byPod, p)
}

// Len is how many pods are remembered.
func (r *Requests) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byUID) + len(r.byPod)
}

// facts returns what the solver reads off p. The lists are shared: do not
// modify them.
func (r *Requests) facts(p *corev1.Pod) podFacts {
	if r == nil {
		return podFacts{requests: podRequests(p), ports: podHostPorts(p)}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.UID != "" {
		f, ok := r.byUID[p.UID]
		if !ok {
			f = podFacts{requests: podRequests(p), ports: podHostPorts(p)}
			r.byUID[p.UID] = f
		}
		return f
	}
	f, ok := r.byPod[p]
	if !ok {
		f = podFacts{requests: podRequests(p), ports: podHostPorts(p)}
		r.byPod[p] = f
	}
	return f
}

// Of returns p's summed requests, as component-helpers' PodRequests sums
// them. The list is shared: do not modify it.
func (r *Requests) Of(p *corev1.Pod) corev1.ResourceList { return r.facts(p).requests }

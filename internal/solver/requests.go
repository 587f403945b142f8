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
// A pod is known by its UID and resourceVersion, so a copy (a bound pod made
// pending for a simulation) finds its original's, and a pod the API server
// changed (a new resourceVersion: an in-place resize, say) is read again; a
// pod without a UID by its object. A pod without a resourceVersion (the
// simulator's) is assumed not to change while in use: Forget it when it
// does. A controller that keeps one Requests from loop to loop calls Prune
// after each, so that pods gone from the cluster are not kept. Safe for
// concurrent use; the zero value is ready to use; a nil *Requests reads
// every time.
type Requests struct {
	mu    sync.Mutex
	byUID map[types.UID]podFacts
	byPod map[*corev1.Pod]podFacts
	// gen counts Prunes; an entry read since the last one carries it.
	gen uint64
}

type podFacts struct {
	requests corev1.ResourceList
	ports    []hostPort
	// rv is the pod's resourceVersion when it was read.
	rv string
	// gen is the Requests' gen when the pod was last read.
	gen uint64
}

// NewRequests returns an empty memo.
func NewRequests() *Requests { return &Requests{} }

// Forget drops what is remembered of p.
func (r *Requests) Forget(p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byUID, p.UID)
	delete(r.byPod, p)
}

// Prune ends a loop: it drops the pods read in neither this loop nor the
// one before (since the last two Prunes), which a controller that keeps
// one Requests from loop to loop no longer sees.
func (r *Requests) Prune() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, f := range r.byUID {
		if f.gen+1 < r.gen {
			delete(r.byUID, uid)
		}
	}
	for p, f := range r.byPod {
		if f.gen+1 < r.gen {
			delete(r.byPod, p)
		}
	}
	r.gen++
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
	if r.byUID == nil {
		r.byUID, r.byPod = map[types.UID]podFacts{}, map[*corev1.Pod]podFacts{}
	}
	if p.UID != "" {
		f, ok := r.byUID[p.UID]
		if !ok || f.rv != p.ResourceVersion {
			f = podFacts{requests: podRequests(p), ports: podHostPorts(p), rv: p.ResourceVersion, gen: r.gen}
			r.byUID[p.UID] = f
		} else if f.gen != r.gen {
			f.gen = r.gen
			r.byUID[p.UID] = f
		}
		return f
	}
	f, ok := r.byPod[p]
	if !ok {
		f = podFacts{requests: podRequests(p), ports: podHostPorts(p), gen: r.gen}
		r.byPod[p] = f
	} else if f.gen != r.gen {
		f.gen = r.gen
		r.byPod[p] = f
	}
	return f
}

// Of returns p's summed requests, as component-helpers' PodRequests sums
// them. The list is shared: do not modify it.
func (r *Requests) Of(p *corev1.Pod) corev1.ResourceList { return r.facts(p).requests }

package termination

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// retries spaces out the evictions of pods whose eviction was refused,
// exponentially per pod, so that a PodDisruptionBudget that holds for long
// is not asked again on every event of the node. It lives in memory only:
// after a restart every pod is tried again at once, which is harmless.
type retries struct {
	mu       sync.Mutex
	min, max time.Duration
	claims   map[string]map[types.UID]retry
}

type retry struct {
	failures int
	next     time.Time
}

func newRetries(lo, hi time.Duration) *retries {
	return &retries{min: lo, max: hi, claims: map[string]map[types.UID]retry{}}
}

// due reports whether a pod may be tried now.
func (r *retries) due(claim string, pod types.UID, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !now.Before(r.claims[claim][pod].next)
}

// failed records a refusal and returns when the pod may be tried again.
func (r *retries) failed(claim string, pod types.UID, now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	pods := r.claims[claim]
	if pods == nil {
		pods = map[types.UID]retry{}
		r.claims[claim] = pods
	}
	e := pods[pod]
	delay := r.min << min(e.failures, 30)
	if delay > r.max || delay <= 0 {
		delay = r.max
	}
	e.failures++
	e.next = now.Add(delay)
	pods[pod] = e
	return e.next
}

// succeeded forgets a pod's refusals.
func (r *retries) succeeded(claim string, pod types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.claims[claim], pod)
}

// next is the earliest time after now that a refused pod of the claim may
// be tried again; zero when none waits.
func (r *retries) next(claim string, now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var t time.Time
	for _, e := range r.claims[claim] {
		if e.next.After(now) && (t.IsZero() || e.next.Before(t)) {
			t = e.next
		}
	}
	return t
}

// forget drops a claim's records once it needs no more evictions.
func (r *retries) forget(claim string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.claims, claim)
}

package cloudprovider

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Unavailable remembers offerings that ran out of capacity until ttl has
// passed. It lives in memory only: after a restart the next launch finds the
// shortage again, which costs one failed try per offering.
type Unavailable struct {
	clock clock.PassiveClock
	ttl   time.Duration
	mu    sync.Mutex
	until map[Offering]time.Time
}

// NewUnavailable returns an empty cache whose entries last ttl by c.
func NewUnavailable(c clock.PassiveClock, ttl time.Duration) *Unavailable {
	return &Unavailable{clock: c, ttl: ttl, until: map[Offering]time.Time{}}
}

// Add marks o unavailable for the cache's ttl from now.
func (u *Unavailable) Add(o Offering) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.until[o] = u.clock.Now().Add(u.ttl)
}

// Has reports whether o is marked unavailable.
func (u *Unavailable) Has(o Offering) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	until, ok := u.until[o]
	if ok && !u.clock.Now().Before(until) {
		delete(u.until, o)
		return false
	}
	return ok
}

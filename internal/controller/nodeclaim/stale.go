package nodeclaim

import (
	"slices"
	"sync"
	"time"
)

// staleAfterWrite is how long a written-over resourceVersion marks the
// cache's copy as stale. The watch normally delivers the write in
// milliseconds; past this the cache is trusted whatever it says, so a write
// undone by someone else cannot stall a claim.
const staleAfterWrite = 30 * time.Second

// writes remembers, per NodeClaim name, the resourceVersions this process
// wrote over. Each write enqueues the claim again through the watch, and on
// a busy API server the next reconcile may read the informer's copy from
// before the write: it would do the step again (a second Create, a second
// status write) only to be refused with a conflict. A copy whose
// resourceVersion is one we wrote over is known to be older than what the
// API server holds, and is waited out instead. Versions are only compared
// for equality, as the API asks.
type writes struct {
	mu sync.Mutex
	m  map[string]*overwritten
}

type overwritten struct {
	versions []string
	at       time.Time
}

// wrote records that a write replaced version of the named claim.
func (w *writes) wrote(name, version string, now time.Time) {
	if version == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]*overwritten{}
	}
	o := w.m[name]
	if o == nil || now.Sub(o.at) > staleAfterWrite {
		o = &overwritten{}
		w.m[name] = o
	}
	o.versions = append(o.versions, version)
	o.at = now
}

// stale reports whether a copy of the named claim at version is older than
// a write this process made. A copy that is not forgets the record: the
// cache has caught up, or someone wrote after us.
func (w *writes) stale(name, version string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := w.m[name]
	if o == nil {
		return false
	}
	if now.Sub(o.at) <= staleAfterWrite && slices.Contains(o.versions, version) {
		return true
	}
	delete(w.m, name)
	return false
}

// forget drops a claim that is gone.
func (w *writes) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, name)
}

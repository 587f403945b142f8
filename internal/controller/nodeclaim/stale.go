package nodeclaim

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
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
// for equality, as the API asks. The status write is a JSON patch that
// lands on whatever version is stored, so a copy of a version another
// writer stored just before it is older too: it is told by the conditions
// the write changed, which it shows otherwise (in a 10,000-pod run, 18 to
// 292 second writes of Initialized a run were refused before this).
type writes struct {
	mu sync.Mutex
	m  map[string]*overwritten
}

type overwritten struct {
	versions []string
	at       time.Time
	// uid and conditions are those of the claim as this process's last
	// status write left it (conditions by type): a JSON patch lands on
	// whatever version is stored, so a copy newer than the version it
	// replaced (another writer's, written before ours landed) may still
	// lack it. Such a copy shows one of these conditions otherwise.
	uid        types.UID
	conditions map[string]metav1.Condition
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

// wroteStatus records a status write: the version it replaced, as wrote,
// and the conditions it changed (by type; a removed one with an empty
// status). The lifecycle is the only writer of its conditions (others write
// conditions of their own types), so a copy that shows one of them
// otherwise is older than this write.
func (w *writes) wroteStatus(name string, uid types.UID, version string, changed map[string]metav1.Condition, now time.Time) {
	w.wrote(name, version, now)
	if len(changed) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	o := w.m[name]
	if o == nil { // no version to remember
		o = &overwritten{at: now}
		w.m[name] = o
	}
	if o.conditions == nil || o.uid != uid {
		o.uid, o.conditions = uid, map[string]metav1.Condition{}
	}
	for typ, c := range changed {
		o.conditions[typ] = c
	}
}

// changedConditions are the conditions after sets otherwise than before,
// by type; one after removes has an empty status.
func changedConditions(before, after []metav1.Condition) map[string]metav1.Condition {
	out := map[string]metav1.Condition{}
	for _, c := range after {
		if was := meta.FindStatusCondition(before, c.Type); was == nil || !sameCondition(*was, c) {
			out[c.Type] = c
		}
	}
	for _, c := range before {
		if meta.FindStatusCondition(after, c.Type) == nil {
			out[c.Type] = metav1.Condition{Type: c.Type}
		}
	}
	return out
}

// sameCondition compares what a condition says: its status, reason and
// message (a rewrite may move its transition time).
func sameCondition(a, b metav1.Condition) bool {
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}

// stale reports whether a copy of a claim is older than a write this
// process made: its version is one a write replaced, or it shows a
// condition other than the last status write left. A copy that is not
// forgets the record: the cache has caught up, or someone wrote after us.
func (w *writes) stale(nc *karpv1.NodeClaim, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := w.m[nc.Name]
	if o == nil {
		return false
	}
	if now.Sub(o.at) <= staleAfterWrite && (slices.Contains(o.versions, nc.ResourceVersion) || o.lacks(nc)) {
		return true
	}
	delete(w.m, nc.Name)
	return false
}

// lacks reports whether the copy nc (the same claim, not one made again
// under its name) shows a condition otherwise than the last status write
// left it.
func (o *overwritten) lacks(nc *karpv1.NodeClaim) bool {
	if o.conditions == nil || nc.UID != o.uid {
		return false
	}
	for typ, want := range o.conditions {
		got := meta.FindStatusCondition(nc.Status.Conditions, typ)
		switch {
		case want.Status == "":
			if got != nil {
				return true
			}
		case got == nil || !sameCondition(*got, want):
			return true
		}
	}
	return false
}

// forget drops a claim that is gone.
func (w *writes) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, name)
}

package nodeclaim

import (
	"sync"
	"time"

	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// Provider calls that failed are retried after a wait that doubles with
// each failure in a row, from launchBackoffMin up to launchBackoffMax, or
// after what a throttled call asked for when that is longer. The workqueue's
// own rate limiter cannot space them: every change of the claim or its node
// (the failure's own status write, kwok's heartbeats) brings the claim back
// at once, so a provider that keeps failing would be called in a loop.
const (
	launchBackoffMin = 500 * time.Millisecond
	launchBackoffMax = 30 * time.Second
)

// Calls spaced out by backoff.
const (
	callCreate = "Create"
	callDelete = "Delete"
)

// backoff remembers, per NodeClaim and provider call, the failures in a
// row and when the call may be made again. It lives in memory only: after a
// restart every call is made at once, which a throttling provider answers
// again.
type backoff struct {
	mu    sync.Mutex
	calls map[string]retryState // claim + "/" + call
}

type retryState struct {
	failures int
	next     time.Time
}

// retryDelay is the wait after the failures-th failure in a row, at least
// retryAfter.
func retryDelay(failures int, retryAfter time.Duration) time.Duration {
	d := launchBackoffMax
	if failures <= 16 {
		d = min(launchBackoffMin<<max(failures-1, 0), launchBackoffMax)
	}
	return max(d, retryAfter)
}

// wait is how long the call must still wait for claim; zero when it may be
// made now.
func (b *backoff) wait(claim, call string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.calls[claim+"/"+call].next.Sub(now), 0)
}

// failed records that the call failed with err and returns the wait before
// the next try.
func (b *backoff) failed(claim, call string, now time.Time, err error) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.calls == nil {
		b.calls = map[string]retryState{}
	}
	s := b.calls[claim+"/"+call]
	s.failures++
	d := retryDelay(s.failures, cloudprovider.RetryAfter(err))
	s.next = now.Add(d)
	b.calls[claim+"/"+call] = s
	return d
}

// succeeded forgets the call's failures.
func (b *backoff) succeeded(claim, call string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.calls, claim+"/"+call)
}

// forget drops every record of a claim that is gone.
func (b *backoff) forget(claim string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.calls, claim+"/"+callCreate)
	delete(b.calls, claim+"/"+callDelete)
}

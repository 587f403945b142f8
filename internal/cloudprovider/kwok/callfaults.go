package kwok

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// Injected errors on Create and Delete (faults.launchErrorPercent and
// faults.deleteErrorPercent). Whether a call fails is drawn from a hash of
// the fault seed, the call, the NodeClaim's name and how many times this
// process has made that call for it, rather than from one shared random
// stream: NodeClaims are reconciled concurrently, and with a shared stream
// which claim got which draw would depend on scheduling. So a run with the
// same seed and the same NodeClaim names fails the same calls, and a retry
// draws afresh.

// ThrottleRetryAfter is the wait an injected throttling error asks for.
const ThrottleRetryAfter = time.Second

// Reasons of the events the provider records on a NodeClaim for each error
// it injects into one of its calls; the message names the kind of error.
const (
	EventLaunchErrorInjected = "KWOKLaunchErrorInjected"
	EventDeleteErrorInjected = "KWOKDeleteErrorInjected"
)

// callFault is what an injected fault does to one call.
type callFault int

const (
	// noFault lets the call through.
	noFault callFault = iota
	// failedCall fails the call before it does anything.
	failedCall
	// throttledCall refuses the call as over a rate limit; it does nothing.
	throttledCall
	// lostResponse lets the call take effect, then fails it.
	lostResponse
)

func (f callFault) String() string {
	return [...]string{"none", "transient", "throttled", "lost response"}[f]
}

// decideFault is the fault for a call given the effective percentages and
// three uniform draws in [0, 1): whether it fails, whether as throttling,
// and, when not, whether after taking effect.
func decideFault(errorPercent, throttledPercent, lostPercent *int32, draws [3]float64) callFault {
	switch {
	case draws[0] >= share(errorPercent):
		return noFault
	case draws[1] < share(throttledPercent):
		return throttledCall
	case draws[2] < share(lostPercent):
		return lostResponse
	}
	return failedCall
}

// share turns a percentage into a fraction, nil and out of range clamped.
func share(percent *int32) float64 {
	if percent == nil {
		return 0
	}
	return float64(min(max(*percent, 0), 100)) / 100
}

// maxCallCounts bounds the calls remembered: past it they are all
// forgotten, which only restarts the numbering of later draws.
const maxCallCounts = 100_000

// callDraws numbers the calls this process makes per call and NodeClaim and
// draws their faults.
type callDraws struct {
	seed int64
	mu   sync.Mutex
	n    map[string]uint64
}

func newCallDraws(seed int64) *callDraws {
	return &callDraws{seed: seed, n: map[string]uint64{}}
}

// next returns the three draws of the next call of that name for claim, and
// the call's number (1-based).
func (d *callDraws) next(call, claim string) ([3]float64, uint64) {
	key := call + "/" + claim
	d.mu.Lock()
	if len(d.n) >= maxCallCounts {
		clear(d.n)
	}
	d.n[key]++
	n := d.n[key]
	d.mu.Unlock()
	var out [3]float64
	for i := range out {
		out[i] = uniform(d.seed, key, n, i)
	}
	return out, n
}

// uniform hashes its arguments into [0, 1). FNV-1a mixes the low bits of
// near-identical inputs poorly, so splitmix64's finalizer follows it.
func uniform(seed int64, key string, n uint64, i int) float64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	_, _ = h.Write(b[:])
	_, _ = h.Write([]byte(key))
	binary.LittleEndian.PutUint64(b[:], n<<8|uint64(i))
	_, _ = h.Write(b[:])
	z := h.Sum64()
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// injected is the fault drawn for one call, with the error it returns.
type injected struct {
	fault callFault
	err   error
	claim *karpv1.NodeClaim
	event string // the reason of the event that reports it
}

// injectFault draws the fault of a call ("Create" or "Delete") for claim
// under faults. The caller returns it with report, if it does: a lost
// response of a call that failed anyway is none.
func (p *Provider) injectFault(claim *karpv1.NodeClaim, call string, faults kwokv1alpha1.KWOKFaults) injected {
	percent, field, reason := faults.LaunchErrorPercent, "launchErrorPercent", EventLaunchErrorInjected
	if call == "Delete" {
		percent, field, reason = faults.DeleteErrorPercent, "deleteErrorPercent", EventDeleteErrorInjected
	}
	if share(percent) == 0 {
		return injected{}
	}
	draws, n := p.draws.next(call, claim.Name)
	fault := decideFault(percent, faults.ThrottledPercent, faults.LostResponsePercent, draws)
	if fault == noFault {
		return injected{}
	}
	cause := fmt.Errorf("injected %s error on call %d of %s for NodeClaim %s (faults.%s %d%%, fault seed %d)",
		fault, n, call, claim.Name, field, *percent, p.opts.FaultSeed)
	var err error = cause
	if fault == throttledCall {
		err = &cloudprovider.ThrottledError{Call: call, RetryAfter: ThrottleRetryAfter, Err: cause}
	}
	return injected{fault: fault, err: err, claim: claim, event: reason}
}

// report records an event on the claim of an injected error about to be
// returned, and returns it wrapped with what the call was doing.
func (p *Provider) report(in injected, doing string) error {
	if p.opts.Recorder != nil && in.claim.UID != "" {
		p.opts.Recorder.Event(in.claim, corev1.EventTypeWarning, in.event, in.err.Error())
	}
	return fmt.Errorf("%s: %w", doing, in.err)
}

// faultsFor returns the faults that apply to claim's calls: its
// KWOKNodeClass's over the defaults, or the defaults alone when the class
// cannot be read (an instance listed without its claim, a class deleted),
// since deleting an instance must not wait for its class.
func (p *Provider) faultsFor(ctx context.Context, claim *karpv1.NodeClaim) kwokv1alpha1.KWOKFaults {
	if claim.Spec.NodeClassRef == nil {
		return effectiveFaults(nil, p.opts.DefaultFaults)
	}
	nc, err := p.nodeClass(ctx, claim)
	if err != nil {
		return effectiveFaults(nil, p.opts.DefaultFaults)
	}
	return effectiveFaults(nc.Spec.Faults, p.opts.DefaultFaults)
}

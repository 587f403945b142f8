package provisioning

import (
	"context"
	"time"
)

// Batcher gathers triggers into batches, with Karpenter's two windows: a
// batch opens at the first trigger and closes once no new pending pod came
// for Idle, or Max after it opened, whichever is first. A burst of pods
// created together is thus planned in one solve, and a steady trickle still
// gets planned every Max.
//
// Only new work holds a batch open (Trigger): a pod the provisioner has not
// planned yet, a node going away, a NodePool changing. An update of a pod it
// already planned (kube-scheduler marking it unschedulable again while its
// node starts, many a second in a burst) only asks for a batch (Poke). Were
// such updates to restart the idle window, a batch opened at the end of a
// burst would stay open until Max, and the last pods of the burst would wait
// up to Max for their nodes instead of Idle. A batch that only pokes opened
// closes after Idle without another poke, as before.
//
// With Early set (and shorter than Max), an open batch also asks for an
// early pass each Early of waiting: the provisioner then launches only the
// NodeClaims the pods so far fill (Launchable), and the batch stays open.
// In a burst that lasts a minute, pods that fill whole nodes get them as
// they come instead of at the next close, and the part-filled NodeClaims
// wait for more pods.
//
// Trigger and Poke may be called from any goroutine; Wait from one only.
type Batcher struct {
	Idle, Max, Early time.Duration
	trigger          chan struct{}
	poke             chan struct{}

	// The open batch, kept from one Wait to the next across early passes.
	open bool
	// fresh: new work came in this batch, so pokes no longer extend it.
	fresh                  bool
	idleAt, maxAt, earlyAt time.Time
	// earlyPassed: the last Wait returned Early; the next Early is counted
	// from when the provisioner comes back, not from when it left.
	earlyPassed bool
}

// Pass is what a batcher's Wait asks the provisioner for.
type Pass int

const (
	// Stop says the context ended.
	Stop Pass = iota
	// Close says the batch closed: plan its pods and launch every NodeClaim.
	Close
	// Early says the batch is still open: plan the pods so far and launch
	// only the NodeClaims they fill.
	Early
)

// NewBatcher returns a batcher with the given windows and no early passes.
func NewBatcher(idle, max time.Duration) *Batcher {
	return &Batcher{Idle: idle, Max: max, trigger: make(chan struct{}, 1), poke: make(chan struct{}, 1)}
}

// Trigger says new work came: it opens a batch, or restarts the open batch's
// idle window. It never blocks.
func (b *Batcher) Trigger() { signal(b.trigger) }

// Poke asks for a batch without holding one open that new work opened. It
// never blocks.
func (b *Batcher) Poke() { signal(b.poke) }

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Wait blocks until the open batch closes (Close) or is due an early pass
// (Early), opening one at the first trigger or poke if none is open. It
// returns Stop once ctx ended.
func (b *Batcher) Wait(ctx context.Context) Pass {
	if !b.open {
		select {
		case <-ctx.Done():
			return Stop
		case <-b.trigger:
			b.fresh = true
		case <-b.poke:
			b.fresh = false
		}
		now := time.Now()
		b.open, b.idleAt, b.maxAt, b.earlyAt = true, now.Add(b.Idle), now.Add(b.Max), now.Add(b.Early)
	} else if b.earlyPassed {
		// Signals that came while the early pass ran count from now: the
		// batch was not listening, and closing it for idleness the pods
		// did not show would be wrong.
		b.earlyAt = time.Now().Add(b.Early)
		select {
		case <-b.trigger:
			b.triggered()
		default:
		}
		select {
		case <-b.poke:
			b.poked()
		default:
		}
	}
	b.earlyPassed = false
	for {
		next, early := b.next()
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			return Stop
		case <-timer.C:
			if early {
				b.earlyPassed = true
				return Early
			}
			b.open = false
			return Close
		case <-b.trigger:
			b.triggered()
		case <-b.poke:
			b.poked()
		}
		timer.Stop()
	}
}

// triggered restarts the open batch's idle window for new work.
func (b *Batcher) triggered() {
	b.fresh = true
	b.idleAt = time.Now().Add(b.Idle)
}

// poked restarts the idle window only of a batch no new work came to.
func (b *Batcher) poked() {
	if !b.fresh {
		b.idleAt = time.Now().Add(b.Idle)
	}
}

// next is the open batch's next deadline, and whether it is an early pass
// rather than the close. A close due at the same time wins.
func (b *Batcher) next() (time.Time, bool) {
	closeAt := b.idleAt
	if b.maxAt.Before(closeAt) {
		closeAt = b.maxAt
	}
	if b.Early > 0 && b.earlyAt.Before(closeAt) {
		return b.earlyAt, true
	}
	return closeAt, false
}

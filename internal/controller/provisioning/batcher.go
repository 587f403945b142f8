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
type Batcher struct {
	Idle, Max time.Duration
	trigger   chan struct{}
	poke      chan struct{}
}

// NewBatcher returns a batcher with the given windows.
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

// Wait blocks until a batch closes, and reports false if ctx ended first.
func (b *Batcher) Wait(ctx context.Context) bool {
	fresh := false // new work came in this batch: pokes no longer extend it
	select {
	case <-ctx.Done():
		return false
	case <-b.trigger:
		fresh = true
	case <-b.poke:
	}
	maxTimer := time.NewTimer(b.Max)
	defer maxTimer.Stop()
	idle := time.NewTimer(b.Idle)
	defer idle.Stop()
	restart := func() {
		if !idle.Stop() {
			<-idle.C
		}
		idle.Reset(b.Idle)
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-maxTimer.C:
			return true
		case <-idle.C:
			return true
		case <-b.trigger:
			fresh = true
			restart()
		case <-b.poke:
			if !fresh {
				restart()
			}
		}
	}
}

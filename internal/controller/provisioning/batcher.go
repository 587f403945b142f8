package provisioning

import (
	"context"
	"time"
)

// Batcher gathers triggers into batches: a batch closes once no trigger came
// for Idle, or Max after it opened, whichever is first. A burst of pods
// created together is thus planned in one solve, and a steady trickle still
// gets planned every Max.
type Batcher struct {
	Idle, Max time.Duration
	trigger   chan struct{}
}

// NewBatcher returns a batcher with the given windows.
func NewBatcher(idle, max time.Duration) *Batcher {
	return &Batcher{Idle: idle, Max: max, trigger: make(chan struct{}, 1)}
}

// Trigger asks for a batch; it never blocks.
func (b *Batcher) Trigger() {
	select {
	case b.trigger <- struct{}{}:
	default:
	}
}

// Wait blocks until a batch closes, and reports false if ctx ended first.
func (b *Batcher) Wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-b.trigger:
	}
	maxTimer := time.NewTimer(b.Max)
	defer maxTimer.Stop()
	idle := time.NewTimer(b.Idle)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-maxTimer.C:
			return true
		case <-idle.C:
			return true
		case <-b.trigger:
			if !idle.Stop() {
				<-idle.C
			}
			idle.Reset(b.Idle)
		}
	}
}

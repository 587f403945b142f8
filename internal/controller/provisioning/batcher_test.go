package provisioning

import (
	"context"
	"testing"
	"time"
)

func TestBatcherClosesWhenIdle(t *testing.T) {
	b := NewBatcher(50*time.Millisecond, 5*time.Second)
	b.Trigger()
	start := time.Now()
	if !b.Wait(context.Background()) {
		t.Fatal("Wait returned false")
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 2*time.Second {
		t.Fatalf("batch closed after %v, want about the 50ms idle window", d)
	}
}

func TestBatcherClosesAtMaxUnderSteadyTriggers(t *testing.T) {
	b := NewBatcher(100*time.Millisecond, 400*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				b.Trigger()
			}
		}
	}()
	b.Trigger()
	start := time.Now()
	if !b.Wait(ctx) {
		t.Fatal("Wait returned false")
	}
	if d := time.Since(start); d < 400*time.Millisecond || d > 3*time.Second {
		t.Fatalf("batch closed after %v, want the 400ms max window", d)
	}
}

func TestBatcherStopsWithContext(t *testing.T) {
	b := NewBatcher(time.Second, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b.Wait(ctx) {
		t.Fatal("Wait returned true for a cancelled context")
	}
}

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
	steadily(ctx, b.Trigger)
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

// steadily calls f every 20ms until ctx ends.
func steadily(ctx context.Context, f func()) {
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				f()
			}
		}
	}()
}

// Once new work came, updates of pods already planned (pokes) do not hold
// the batch open: it closes after the idle window, not at max.
func TestBatcherPokesDoNotHoldNewWorkOpen(t *testing.T) {
	b := NewBatcher(100*time.Millisecond, 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Trigger()
	steadily(ctx, b.Poke)
	start := time.Now()
	if !b.Wait(ctx) {
		t.Fatal("Wait returned false")
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Fatalf("batch closed after %v, want about the 100ms idle window, well before the 5s max", d)
	}
}

// A batch only pokes opened behaves as before: it closes after the idle
// window once the pokes stop, and at max while they go on.
func TestBatcherPokeOnlyBatch(t *testing.T) {
	b := NewBatcher(50*time.Millisecond, 5*time.Second)
	b.Poke()
	start := time.Now()
	if !b.Wait(context.Background()) {
		t.Fatal("Wait returned false")
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 2*time.Second {
		t.Fatalf("single poke: batch closed after %v, want about the 50ms idle window", d)
	}

	b = NewBatcher(100*time.Millisecond, 400*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Poke()
	steadily(ctx, b.Poke)
	start = time.Now()
	if !b.Wait(ctx) {
		t.Fatal("Wait returned false")
	}
	if d := time.Since(start); d < 400*time.Millisecond || d > 3*time.Second {
		t.Fatalf("steady pokes: batch closed after %v, want the 400ms max window", d)
	}
}

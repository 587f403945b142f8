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
	if b.Wait(context.Background()) != Close {
		t.Fatal("Wait did not close the batch")
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
	if b.Wait(ctx) != Close {
		t.Fatal("Wait did not close the batch")
	}
	if d := time.Since(start); d < 400*time.Millisecond || d > 3*time.Second {
		t.Fatalf("batch closed after %v, want the 400ms max window", d)
	}
}

func TestBatcherStopsWithContext(t *testing.T) {
	b := NewBatcher(time.Second, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := b.Wait(ctx); got != Stop {
		t.Fatalf("Wait returned %v for a cancelled context, want Stop", got)
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
	if b.Wait(ctx) != Close {
		t.Fatal("Wait did not close the batch")
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
	if b.Wait(context.Background()) != Close {
		t.Fatal("Wait did not close the batch")
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
	if b.Wait(ctx) != Close {
		t.Fatal("Wait did not close the batch")
	}
	if d := time.Since(start); d < 400*time.Millisecond || d > 3*time.Second {
		t.Fatalf("steady pokes: batch closed after %v, want the 400ms max window", d)
	}
}

// waitTimed calls Wait and says what it returned and how long after start.
func waitTimed(ctx context.Context, b *Batcher, start time.Time) (Pass, time.Duration) {
	p := b.Wait(ctx)
	return p, time.Since(start)
}

// While new work keeps a batch open, it is due an early pass every Early,
// and it still closes at Max.
func TestBatcherEarlyPassesUntilMax(t *testing.T) {
	b := NewBatcher(100*time.Millisecond, 800*time.Millisecond)
	b.Early = 150 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	steadily(ctx, b.Trigger)
	b.Trigger()
	start := time.Now()
	var earlies []time.Duration
	for {
		p, at := waitTimed(ctx, b, start)
		if p == Close {
			if at < 800*time.Millisecond || at > 3*time.Second {
				t.Fatalf("batch closed after %v, want the 800ms max window", at)
			}
			break
		}
		if p != Early {
			t.Fatalf("Wait returned %v, want Early or Close", p)
		}
		earlies = append(earlies, at)
	}
	if len(earlies) < 2 || len(earlies) > 5 {
		t.Fatalf("early passes at %v, want one about every 150ms of the 800ms batch", earlies)
	}
	for i, at := range earlies {
		if at < time.Duration(i+1)*150*time.Millisecond {
			t.Fatalf("early pass %d at %v, sooner than %d times the 150ms interval", i+1, at, i+1)
		}
	}
}

// An early pass does not delay the close: a batch with no new work after
// its first trigger closes at Idle, and a close due with an early pass
// wins.
func TestBatcherEarlyPassesDoNotHoldTheBatchOpen(t *testing.T) {
	b := NewBatcher(300*time.Millisecond, 5*time.Second)
	b.Early = 100 * time.Millisecond
	b.Trigger()
	start := time.Now()
	ctx := context.Background()
	var got []Pass
	for {
		p, at := waitTimed(ctx, b, start)
		got = append(got, p)
		if p == Close {
			if at < 300*time.Millisecond || at > 2*time.Second {
				t.Fatalf("batch closed after %v, want about the 300ms idle window", at)
			}
			break
		}
		if len(got) > 5 {
			t.Fatalf("passes %v and no close", got)
		}
	}
	if len(got) < 2 || got[0] != Early {
		t.Fatalf("passes %v, want early ones before the close", got)
	}
}

// The time an early pass takes is not counted as idle when new work came
// meanwhile; without new work, the batch closes as soon as the pass is
// back. The next early pass is an Early after the provisioner came back.
func TestBatcherEarlyPassDuration(t *testing.T) {
	for _, tc := range []struct {
		name         string
		triggerInRun bool
		want         Pass
	}{
		{"new work during the pass keeps the batch open", true, Early},
		{"no new work during the pass closes the batch", false, Close},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBatcher(100*time.Millisecond, 5*time.Second)
			b.Early = 50 * time.Millisecond
			b.Trigger()
			ctx := context.Background()
			if p := b.Wait(ctx); p != Early {
				t.Fatalf("first Wait returned %v, want Early", p)
			}
			// The early pass runs for longer than the idle window.
			if tc.triggerInRun {
				b.Trigger()
			}
			time.Sleep(250 * time.Millisecond)
			back := time.Now()
			p, at := waitTimed(ctx, b, back)
			if p != tc.want {
				t.Fatalf("Wait after the pass returned %v, want %v", p, tc.want)
			}
			if p == Early && (at < 50*time.Millisecond || at > 2*time.Second) {
				t.Fatalf("next early pass %v after the provisioner came back, want the 50ms interval", at)
			}
		})
	}
}

// Without Early, or with an Early no shorter than Max, a batch only closes.
func TestBatcherNoEarlyPasses(t *testing.T) {
	for _, early := range []time.Duration{0, 400 * time.Millisecond} {
		b := NewBatcher(100*time.Millisecond, 400*time.Millisecond)
		b.Early = early
		ctx, cancel := context.WithCancel(context.Background())
		steadily(ctx, b.Trigger)
		b.Trigger()
		if p := b.Wait(ctx); p != Close {
			t.Fatalf("Early %v: Wait returned %v, want Close", early, p)
		}
		cancel()
	}
}

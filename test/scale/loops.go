package scale

import "context"

// stopped reports whether ctx ended or done closed: the profile loops look
// before each profile, which takes seconds, not during one.
func stopped(ctx context.Context, done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// inBackground runs loop in a goroutine until the returned stop is called,
// which closes loop's done channel and waits for loop to return.
func inBackground(loop func(done <-chan struct{})) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		loop(done)
	}()
	return func() { close(done); <-finished }
}

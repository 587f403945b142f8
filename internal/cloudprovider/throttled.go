package cloudprovider

import (
	"errors"
	"fmt"
	"time"
)

// ThrottledError says the provider refused a call because its caller went
// over a rate limit (EC2's RequestLimitExceeded, an HTTP 429). The call did
// nothing; it may be made again once RetryAfter has passed. Callers tell it
// apart because retrying at once only prolongs the throttling.
type ThrottledError struct {
	// Call is the provider method refused, such as Create.
	Call string
	// RetryAfter is how long the provider asked the caller to wait; zero
	// when it did not say.
	RetryAfter time.Duration
	// Err is the provider's own error, if any.
	Err error
}

func (e *ThrottledError) Error() string {
	msg := e.Call + " throttled"
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(", retry after %s", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *ThrottledError) Unwrap() error { return e.Err }

// IsThrottled reports whether err is or wraps a *ThrottledError.
func IsThrottled(err error) bool {
	var t *ThrottledError
	return errors.As(err, &t)
}

// RetryAfter is how long a throttled call asked to be waited for before it
// is made again; zero for any other error.
func RetryAfter(err error) time.Duration {
	var t *ThrottledError
	if errors.As(err, &t) {
		return max(t.RetryAfter, 0)
	}
	return 0
}

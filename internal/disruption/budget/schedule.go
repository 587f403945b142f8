package budget

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// macros are the schedule shorthands Karpenter's CRD admits. The cron
// library knows "@every" too, which the CRD refuses, so it is refused here.
var macros = map[string]bool{
	"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true,
	"@daily": true, "@midnight": true, "@hourly": true,
}

// maxSpanTicks bounds the walk over overlapping ticks when looking for the
// end of an active span: a schedule that ticks more often than its duration
// ("* * * * *" for 8h) is active for good, and the walk would never end.
const maxSpanTicks = 1000

// Window is where an instant falls in a budget's schedule.
type Window struct {
	// Active says whether the budget applies at the instant.
	Active bool
	// Scheduled is false for a budget without schedule, which is always
	// active.
	Scheduled bool
	// Until is when the active span that holds the instant ends; zero when
	// the budget is not active or has no schedule. Overlapping windows make
	// one span.
	Until time.Time
	// UntilAtLeast says the span's ticks overlapped for so long that its end
	// was not looked for beyond Until; the budget is still active then.
	UntilAtLeast bool
	// Next is when an inactive budget becomes active; zero when it is active,
	// or when its schedule does not tick within five years ("0 0 30 2 *").
	Next time.Time
}

// Change is the next instant at which the budget's activity may change, or
// zero if none is known.
func (w Window) Change() time.Time {
	if w.Active {
		return w.Until
	}
	return w.Next
}

// WindowAt tells whether budget b is active at now. A budget with a schedule
// is active from each tick t of its UTC cron schedule for its duration:
// t <= now < t+duration. The error is a *FieldError whose Field is the
// budget's own field ("schedule", "duration").
func WindowAt(b karpv1.Budget, now time.Time) (Window, error) {
	if b.Schedule == nil && b.Duration == nil {
		return Window{Active: true}, nil
	}
	if b.Schedule == nil {
		return Window{}, &FieldError{Field: "schedule", Err: errors.New("a duration needs a schedule")}
	}
	sched, err := ParseSchedule(*b.Schedule)
	if err != nil {
		return Window{}, &FieldError{Field: "schedule", Value: *b.Schedule, Err: err}
	}
	if b.Duration == nil {
		return Window{}, &FieldError{Field: "duration", Err: errors.New("a schedule needs a duration")}
	}
	d := b.Duration.Duration
	if d < 0 {
		return Window{}, &FieldError{Field: "duration", Value: d.String(), Err: errors.New("must not be negative")}
	}
	now = now.UTC()
	w := Window{Scheduled: true}
	// The first tick after now-d is the earliest one whose window still
	// holds now; if it is later than now, no window does.
	if d == 0 {
		return w, nil // a window of no time holds no instant
	}
	first := sched.Next(now.Add(-d))
	if first.IsZero() || first.After(now) {
		w.Next = first
		return w, nil
	}
	w.Active = true
	w.Until, w.UntilAtLeast = spanEnd(sched, first, d)
	return w, nil
}

// spanEnd follows ticks from first while each falls inside the window the
// previous one opened, and returns when the last window closes.
func spanEnd(sched cron.Schedule, first time.Time, d time.Duration) (time.Time, bool) {
	t, end := first, first.Add(d)
	for range maxSpanTicks {
		n := sched.Next(t)
		if n.IsZero() || n.After(end) {
			return end, false
		}
		t, end = n, n.Add(d)
	}
	return end, true
}

// ParseSchedule reads a budget schedule as Karpenter does: five cron fields
// (minute, hour, day of month, month, day of week) or one of the macros
// @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly,
// always in UTC.
func ParseSchedule(s string) (cron.Schedule, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "@") {
		if !macros[s] {
			return nil, fmt.Errorf("not one of the macros @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly")
		}
	} else if n := len(strings.Fields(s)); n != 5 {
		return nil, fmt.Errorf("has %d fields, want 5: minute hour day-of-month month day-of-week (UTC)", n)
	}
	sched, err := cron.ParseStandard("TZ=UTC " + s)
	if err != nil {
		return nil, fmt.Errorf("not a cron schedule: %w", err)
	}
	return sched, nil
}

package budget

import (
	"fmt"
	"strings"
	"time"
)

// String names the budget and its fields, such as
// "budget 2 (nodes: 0, schedule '0 9 * * mon-fri', duration 8h)".
func (s BudgetState) String() string {
	var b strings.Builder
	if s.Index < 0 {
		b.WriteString("the default budget (nodes: ")
	} else {
		fmt.Fprintf(&b, "budget %d (nodes: ", s.Index)
	}
	b.WriteString(s.Budget.Nodes)
	if len(s.Budget.Reasons) > 0 {
		rs := make([]string, len(s.Budget.Reasons))
		for i, r := range s.Budget.Reasons {
			rs[i] = string(r)
		}
		fmt.Fprintf(&b, ", reasons: %s", strings.Join(rs, ", "))
	}
	if s.Budget.Schedule != nil {
		fmt.Fprintf(&b, ", schedule '%s'", *s.Budget.Schedule)
	}
	if s.Budget.Duration != nil {
		fmt.Fprintf(&b, ", duration %s", shortDuration(s.Budget.Duration.Duration))
	}
	b.WriteString(")")
	return b.String()
}

// explain says why the budget allows what it allows at now.
func (s BudgetState) explain(total, disrupting int, now time.Time) string {
	if s.Err != nil {
		return fmt.Sprintf("%s is invalid and allows no disruption: %v", s, s.Err)
	}
	active := ""
	if s.Window.Scheduled {
		until := "until"
		if s.Window.UntilAtLeast {
			until = "until at least"
		}
		active = fmt.Sprintf(" is active %s %s and", until, clock(s.Window.Until, now))
	}
	return fmt.Sprintf("%s%s allows %d of %d nodes; %d already disrupting", s, active, s.Limit, total, disrupting)
}

// shortDuration writes 8h rather than 8h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// clock writes t in UTC, with the date only when it is not now's day.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	layout := "15:04"
	if t.Second() != 0 {
		layout = "15:04:05"
	}
	if t.YearDay() != now.YearDay() || t.Year() != now.Year() {
		layout = "Mon 2006-01-02 " + layout
	}
	return t.Format(layout) + " UTC"
}

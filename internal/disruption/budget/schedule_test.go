package budget

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// 2024-01-01 is a Monday.
func at(day, hour, minute, second int) time.Time {
	return time.Date(2024, 1, day, hour, minute, second, 0, time.UTC)
}

func scheduled(nodes, schedule string, d time.Duration) karpv1.Budget {
	return karpv1.Budget{Nodes: nodes, Schedule: &schedule, Duration: &metav1.Duration{Duration: d}}
}

func TestWindowOpensAtTickAndClosesAfterDuration(t *testing.T) {
	weekdays := scheduled("0", "0 9 * * mon-fri", 8*time.Hour)
	paris := time.FixedZone("CET", 3600)
	for _, tc := range []struct {
		name   string
		budget karpv1.Budget
		now    time.Time
		want   Window
	}{
		{"no schedule is always active", karpv1.Budget{Nodes: "1"}, at(2, 3, 0, 0), Window{Active: true}},
		{"Tuesday at the tick", weekdays, at(2, 9, 0, 0), Window{Active: true, Scheduled: true, Until: at(2, 17, 0, 0)}},
		{"Tuesday a second before the tick", weekdays, at(2, 8, 59, 59), Window{Scheduled: true, Next: at(2, 9, 0, 0)}},
		{"Tuesday a second before the end", weekdays, at(2, 16, 59, 59), Window{Active: true, Scheduled: true, Until: at(2, 17, 0, 0)}},
		{"Tuesday at the end", weekdays, at(2, 17, 0, 0), Window{Scheduled: true, Next: at(3, 9, 0, 0)}},
		{"Saturday noon", weekdays, at(6, 12, 0, 0), Window{Scheduled: true, Next: at(8, 9, 0, 0)}},
		{"Friday afternoon", weekdays, at(5, 16, 0, 0), Window{Active: true, Scheduled: true, Until: at(5, 17, 0, 0)}},
		{"schedule is UTC whatever now's zone", weekdays, time.Date(2024, 1, 2, 9, 30, 0, 0, paris), Window{Scheduled: true, Next: at(2, 9, 0, 0)}},
		{"@daily inside", scheduled("0", "@daily", time.Hour), at(3, 0, 30, 0), Window{Active: true, Scheduled: true, Until: at(3, 1, 0, 0)}},
		{"@daily after", scheduled("0", "@daily", time.Hour), at(3, 1, 0, 0), Window{Scheduled: true, Next: at(4, 0, 0, 0)}},
		{"@midnight with a spare space", scheduled("0", " @midnight ", time.Hour), at(3, 0, 0, 0), Window{Active: true, Scheduled: true, Until: at(3, 1, 0, 0)}},
		{"overlapping ticks make one span", scheduled("0", "0 9,10 * * *", 90*time.Minute), at(3, 9, 30, 0), Window{Active: true, Scheduled: true, Until: at(3, 11, 30, 0)}},
		{"ticks closer than the duration never end", scheduled("0", "@hourly", 2*time.Hour), at(3, 9, 30, 0), Window{Active: true, Scheduled: true, Until: at(3, 8, 0, 0).Add(maxSpanTicks * time.Hour).Add(2 * time.Hour), UntilAtLeast: true}},
		{"a schedule that never ticks", scheduled("0", "0 0 30 2 *", time.Hour), at(3, 0, 0, 0), Window{Scheduled: true}},
		{"a zero duration is never active", scheduled("0", "@hourly", 0), at(3, 9, 0, 0), Window{Scheduled: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WindowAt(tc.budget, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestWindowRefusesBadSchedules(t *testing.T) {
	sched := func(s string) *string { return &s }
	hour := &metav1.Duration{Duration: time.Hour}
	for _, tc := range []struct {
		name   string
		budget karpv1.Budget
		field  string
		says   string
	}{
		{"minute out of range", karpv1.Budget{Schedule: sched("61 * * * *"), Duration: hour}, "schedule", "not a cron schedule"},
		{"four fields", karpv1.Budget{Schedule: sched("0 9 * *"), Duration: hour}, "schedule", "want 5"},
		{"seconds field", karpv1.Budget{Schedule: sched("0 0 9 * * *"), Duration: hour}, "schedule", "want 5"},
		{"time zone prefix", karpv1.Budget{Schedule: sched("TZ=Europe/Paris 0 9 * * *"), Duration: hour}, "schedule", "want 5"},
		{"@every", karpv1.Budget{Schedule: sched("@every 1h"), Duration: hour}, "schedule", "macros"},
		{"empty", karpv1.Budget{Schedule: sched(""), Duration: hour}, "schedule", "want 5"},
		{"schedule without duration", karpv1.Budget{Schedule: sched("@daily")}, "duration", "needs a duration"},
		{"duration without schedule", karpv1.Budget{Duration: hour}, "schedule", "needs a schedule"},
		{"negative duration", karpv1.Budget{Schedule: sched("@daily"), Duration: &metav1.Duration{Duration: -time.Hour}}, "duration", "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := WindowAt(tc.budget, at(2, 9, 0, 0))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("got %+v, %v; want a *FieldError", w, err)
			}
			if fe.Field != tc.field || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("got field %q, %q; want field %q saying %q", fe.Field, err, tc.field, tc.says)
			}
		})
	}
}

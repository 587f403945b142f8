package scale

import (
	"reflect"
	"testing"
)

func TestParseScheduler(t *testing.T) {
	page := `# HELP scheduler_schedule_attempts_total [STABLE] Number of attempts to schedule pods
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 90
scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 40
scheduler_queue_incoming_pods_total{event="NodeAdd",queue="active"} 12
scheduler_queue_incoming_pods_total{event="NodeAdd",queue="backoff"} 3
scheduler_queue_incoming_pods_total{event="ScheduleAttemptFailure",queue="unschedulable"} 40
scheduler_pod_scheduling_attempts_bucket{le="1"} 70
scheduler_pod_scheduling_attempts_sum 130
scheduler_pod_scheduling_attempts_count 90
scheduler_pending_pods{queue="active"} 0
`
	got := parseScheduler(page)
	want := schedulerCounts{
		attempts:   map[string]float64{"scheduled": 90, "unschedulable": 40},
		incoming:   map[string]float64{"active NodeAdd": 12, "backoff NodeAdd": 3, "unschedulable ScheduleAttemptFailure": 40},
		boundPods:  90,
		boundTries: 130,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseScheduler = %+v, want %+v", got, want)
	}
}

func TestSchedulerSummary(t *testing.T) {
	before := schedulerCounts{
		attempts:  map[string]float64{"scheduled": 10},
		incoming:  map[string]float64{"active NodeAdd": 2},
		boundPods: 10, boundTries: 10,
	}
	after := schedulerCounts{
		attempts:  map[string]float64{"scheduled": 110, "unschedulable": 50},
		incoming:  map[string]float64{"active NodeAdd": 32, "unschedulable ScheduleAttemptFailure": 50},
		boundPods: 110, boundTries: 160,
	}
	got := schedulerSummary(before, after, 1)
	want := "tries: scheduled 100, unschedulable 50; 1.50 tries per pod bound; pods queued 80 times, most: unschedulable ScheduleAttemptFailure 50"
	if got != want {
		t.Errorf("schedulerSummary =\n%s\nwant\n%s", got, want)
	}
}

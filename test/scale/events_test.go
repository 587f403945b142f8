package scale

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestAddEvent(t *testing.T) {
	events := []corev1.Event{
		{Reason: "Nominated", Source: corev1.EventSource{Component: "nodewright"}, Count: 1},
		{Reason: "Nominated", Source: corev1.EventSource{Component: "nodewright"}, Count: 3},
		{Reason: "FailedScheduling", ReportingController: "default-scheduler"},
		{Reason: "FailedScheduling", ReportingController: "default-scheduler", Series: &corev1.EventSeries{Count: 4}},
		{Reason: "Scheduled", ReportingController: "default-scheduler", Source: corev1.EventSource{Component: "ignored"}},
	}
	counts := map[[2]string]*eventCount{}
	for i := range events {
		addEvent(counts, &events[i])
	}
	want := map[[2]string]eventCount{
		{"nodewright", "Nominated"}:               {source: "nodewright", reason: "Nominated", objects: 2, times: 4},
		{"default-scheduler", "FailedScheduling"}: {source: "default-scheduler", reason: "FailedScheduling", objects: 2, times: 5},
		{"default-scheduler", "Scheduled"}:        {source: "default-scheduler", reason: "Scheduled", objects: 1, times: 1},
	}
	if len(counts) != len(want) {
		t.Fatalf("%d counts, want %d: %v", len(counts), len(want), counts)
	}
	for k, w := range want {
		if got := counts[k]; got == nil || *got != w {
			t.Errorf("%v: got %+v, want %+v", k, got, w)
		}
	}
}

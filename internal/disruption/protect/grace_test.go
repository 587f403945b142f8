package protect

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodDeletionMeetsNodeDeadline(t *testing.T) {
	start := now
	hour := &metav1.Duration{Duration: time.Hour}
	secs := func(s int64) *int64 { return &s }
	for _, tc := range []struct {
		name string
		tgp  *metav1.Duration
		pod  *int64
		at   time.Duration // since start
		want Deletion
	}{
		{"no terminationGracePeriod, no deadline", nil, secs(60), time.Hour, Deletion{Grace: time.Minute}},
		{"pod default grace is 30s", nil, nil, 0, Deletion{Grace: 30 * time.Second}},
		{"before the pod's turn", hour, secs(60), 10 * time.Minute,
			Deletion{Deadline: start.Add(time.Hour), DeleteAt: start.Add(59 * time.Minute), Grace: time.Minute}},
		{"at the pod's turn", hour, secs(60), 59 * time.Minute,
			Deletion{Deadline: start.Add(time.Hour), DeleteAt: start.Add(59 * time.Minute), Due: true, Grace: time.Minute}},
		{"late: grace cut to what is left", hour, secs(60), 59*time.Minute + 30*time.Second,
			Deletion{Deadline: start.Add(time.Hour), DeleteAt: start.Add(59 * time.Minute), Due: true, Grace: 30 * time.Second}},
		{"deadline passed", hour, secs(60), 2 * time.Hour,
			Deletion{Deadline: start.Add(time.Hour), DeleteAt: start.Add(59 * time.Minute), Due: true, DeadlinePassed: true}},
		{"pod grace longer than the node's: delete at start", hour, secs(7200), 0,
			Deletion{Deadline: start.Add(time.Hour), DeleteAt: start, Due: true, Grace: time.Hour}},
		{"negative pod grace reads as 0", hour, secs(-5), 0,
			Deletion{Deadline: start.Add(time.Hour), DeleteAt: start.Add(time.Hour), Grace: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodDeletion(start, tc.tgp, tc.pod, start.Add(tc.at)); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

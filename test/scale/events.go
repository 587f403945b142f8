package scale

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// eventCount is how many Event objects one component stored for one reason,
// and how many occurrences they stand for (an Event repeated is one object
// whose count grows: a PATCH, not a POST).
type eventCount struct {
	source, reason string
	objects, times int
}

// eventsBySource lists every Event in the cluster and counts them by the
// component that reported them and their reason, most objects first. The
// API server's request counters say how many events were posted, not whose:
// this tells kube-scheduler's FailedScheduling from nodewright's Nominated.
func eventsBySource(ctx context.Context, cs kubernetes.Interface) ([]eventCount, error) {
	counts := map[[2]string]*eventCount{}
	opts := metav1.ListOptions{Limit: 5000}
	for {
		list, err := cs.CoreV1().Events("").List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing events: %w", err)
		}
		for i := range list.Items {
			addEvent(counts, &list.Items[i])
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	out := make([]eventCount, 0, len(counts))
	for _, c := range counts {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].objects != out[j].objects {
			return out[i].objects > out[j].objects
		}
		return out[i].source+out[i].reason < out[j].source+out[j].reason
	})
	return out, nil
}

// addEvent counts e under its reporter: the events.k8s.io field when set
// (kube-scheduler), else the core source component (client-go's recorders).
func addEvent(counts map[[2]string]*eventCount, e *corev1.Event) {
	source := e.ReportingController
	if source == "" {
		source = e.Source.Component
	}
	k := [2]string{source, e.Reason}
	c := counts[k]
	if c == nil {
		c = &eventCount{source: source, reason: e.Reason}
		counts[k] = c
	}
	c.objects++
	times := int(e.Count)
	if e.Series != nil && int(e.Series.Count) > times {
		times = int(e.Series.Count)
	}
	c.times += max(times, 1)
}

// fmtEvents is counts for a log line, at most n of them.
func fmtEvents(counts []eventCount, n int) []string {
	var out []string
	for i, c := range counts {
		if i == n {
			out = append(out, fmt.Sprintf("%d more", len(counts)-n))
			break
		}
		out = append(out, fmt.Sprintf("%s %s %d (%d times)", c.source, c.reason, c.objects, c.times))
	}
	return out
}

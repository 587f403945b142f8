package simulate

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/manifests"
)

// runStart is the instant the run begins: the timeline's start when it
// gives one, else DefaultStart or, when the input records a later instant
// (a dump of a live cluster does), that instant rounded up to the whole
// minute. Node ages, consolidateAfter, expiry and cost all count from the
// instants the input records, so a clock behind them makes ages and cost
// negative and leaves those deadlines never due: a given start before them
// is an error, naming the object, the field and the fix.
func runStart(tl *Timeline, set *manifests.Set) (time.Time, error) {
	latest := latestRecorded(set)
	if tl.Start.IsZero() {
		return later(DefaultStart, ceilMinute(latest.at)), nil
	}
	if latest.at.After(tl.Start) {
		return time.Time{}, fmt.Errorf("start: %s is before %s %s: the run cannot begin before the objects it starts from exist; set start to %s or later, or leave it out to begin then",
			tl.Start.Format(time.RFC3339), latest.where, latest.at.UTC().Format(time.RFC3339), ceilMinute(latest.at).Format(time.RFC3339))
	}
	return tl.Start, nil
}

// recorded is an instant the input records, and where, for messages.
type recorded struct {
	at    time.Time
	where string // "Pod shop/web-1's metadata.creationTimestamp"
}

// latestRecorded is the latest instant among those the run reads from the
// input: the creationTimestamps of Nodes, NodeClaims and Pods, and a
// NodeClaim's condition times and lastPodEventTime, from which
// consolidateAfter counts. Other kinds' timestamps are not read by the run,
// and a pod's status times are replaced when it is adopted. The first
// object wins a tie. Zero when the input records none.
func latestRecorded(set *manifests.Set) recorded {
	var r recorded
	note := func(t metav1.Time, what, name, field string) {
		if t.After(r.at) {
			r = recorded{at: t.Time, where: what + " " + name + "'s " + field}
		}
	}
	for _, n := range set.Nodes {
		note(n.CreationTimestamp, "Node", n.Name, "metadata.creationTimestamp")
	}
	for _, nc := range set.NodeClaims {
		note(nc.CreationTimestamp, "NodeClaim", nc.Name, "metadata.creationTimestamp")
		for _, c := range nc.Status.Conditions {
			note(c.LastTransitionTime, "NodeClaim", nc.Name, "status.conditions["+c.Type+"].lastTransitionTime")
		}
		note(nc.Status.LastPodEventTime, "NodeClaim", nc.Name, "status.lastPodEventTime")
	}
	for _, p := range set.Pods {
		note(p.CreationTimestamp, "Pod", p.Namespace+"/"+p.Name, "metadata.creationTimestamp")
	}
	return r
}

// ceilMinute rounds t up to the whole minute, in UTC, so that a start
// taken from the input is both after it and easy to read and to reuse.
func ceilMinute(t time.Time) time.Time {
	m := t.UTC().Truncate(time.Minute)
	if m.Before(t) {
		m = m.Add(time.Minute)
	}
	return m
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

package simulate

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/manifests"
)

// TestDumpAfterTheDefaultStart runs a kubectl get -o yaml dump taken in
// September 2026, months after DefaultStart, as a user would: the run
// must begin once its objects exist, so that the cost is not negative and
// the nodes' ages let consolidation happen when the workload shrinks; a
// start before them is refused, naming the object and the fix.
func TestDumpAfterTheDefaultStart(t *testing.T) {
	const shrink = `
duration: 2h
events:
- at: 10m
  scale: {kind: Deployment, name: web, replicas: 2}
`
	cases := []struct {
		name      string
		timeline  string
		wantStart string
		wantErr   []string // substrings of the error; nil for a run
	}{
		{name: "no start: the input's latest instant, rounded up to the minute", timeline: shrink,
			wantStart: "2026-09-14T08:13:00Z"},
		{name: "a start after the input", timeline: "start: 2026-09-15T00:00:00Z" + shrink,
			wantStart: "2026-09-15T00:00:00Z"},
		{name: "a start before the input", timeline: "start: 2026-01-05T00:00:00Z" + shrink,
			wantErr: []string{"test timeline: start: 2026-01-05T00:00:00Z is before", "Pod default/web-7d9-6",
				"metadata.creationTimestamp 2026-09-14T08:12:42Z", "set start to 2026-09-14T08:13:00Z or later"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, problems := manifests.Load("testdata/dump")
			if len(problems) > 0 {
				t.Fatalf("objects skipped: %v", problems)
			}
			tl, err := ParseTimeline("test timeline", []byte(tc.timeline))
			if err != nil {
				t.Fatal(err)
			}
			e, err := New(set, Options{Timeline: tl})
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("no error; want one containing %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, err := e.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if r.Start != tc.wantStart {
				t.Errorf("start %s, want %s", r.Start, tc.wantStart)
			}
			// Three m5.xlarge at most, for two hours at most.
			if most := 3 * 0.192 * 2; r.Cost < 0 || r.Cost > most {
				t.Errorf("cost $%.2f; want between 0 and $%.2f", r.Cost, most)
			}
			shrunk := 0
			for _, ev := range r.Events {
				if (ev.Kind == "Empty" || ev.Kind == "Underutilized") && ev.At.Duration > 10*time.Minute {
					shrunk++
				}
			}
			if shrunk == 0 {
				t.Errorf("no consolidation after web shrank at 10m; events %v", r.Events)
			}
			if s := at(t, r, 2*time.Hour); s.Nodes != 1 || s.RunningPods != 2 {
				t.Errorf("at the end: %+v; want web's 2 pods on one node", s)
			}
		})
	}
}

// TestRunStart: the run starts where the timeline says, else at
// DefaultStart or the latest instant the input records, whichever is
// later, rounded up to the minute; a start before the input is an error
// naming the object and the field.
func TestRunStart(t *testing.T) {
	at := func(s string) metav1.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return metav1.NewTime(v)
	}
	claim := func(created, initialized, lastPodEvent string) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: at(created)}}
		nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, LastTransitionTime: at(initialized)}}
		if lastPodEvent != "" {
			nc.Status.LastPodEventTime = at(lastPodEvent)
		}
		return nc
	}
	node := func(created string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: at(created)}}
	}
	pod := func(created string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "p", CreationTimestamp: at(created)}}
	}
	cases := []struct {
		name    string
		start   string // the timeline's; "" for none
		set     manifests.Set
		want    string
		wantErr string
	}{
		{name: "no timestamps", want: "2026-01-05T00:00:00Z"},
		{name: "input before the default start", set: manifests.Set{Nodes: []*corev1.Node{node("2025-12-01T10:00:00Z")}},
			want: "2026-01-05T00:00:00Z"},
		{name: "a node created later, rounded up", set: manifests.Set{Nodes: []*corev1.Node{node("2026-09-14T08:12:40Z")}},
			want: "2026-09-14T08:13:00Z"},
		{name: "on the minute, kept", set: manifests.Set{Pods: []*corev1.Pod{pod("2026-09-14T08:12:00Z")}},
			want: "2026-09-14T08:12:00Z"},
		{name: "a claim's last pod event, after every creation",
			set:  manifests.Set{NodeClaims: []*karpv1.NodeClaim{claim("2026-09-14T08:00:00Z", "2026-09-14T08:01:00Z", "2026-09-14T09:30:05Z")}},
			want: "2026-09-14T09:31:00Z"},
		{name: "a claim's Initialized condition", set: manifests.Set{NodeClaims: []*karpv1.NodeClaim{claim("2026-09-14T08:00:00Z", "2026-09-14T08:01:10Z", "")}},
			want: "2026-09-14T08:02:00Z"},
		{name: "the latest of several", set: manifests.Set{Nodes: []*corev1.Node{node("2026-09-14T08:00:00Z")}, Pods: []*corev1.Pod{pod("2026-09-20T00:00:01Z")}},
			want: "2026-09-20T00:01:00Z"},
		{name: "a given start after the input, kept as given", start: "2026-09-14T08:12:40Z",
			set: manifests.Set{Pods: []*corev1.Pod{pod("2026-09-14T08:12:40Z")}}, want: "2026-09-14T08:12:40Z"},
		{name: "a given start before the default start", start: "2025-06-01T00:00:00Z", want: "2025-06-01T00:00:00Z"},
		{name: "a given start before a pod", start: "2026-01-05T00:00:00Z", set: manifests.Set{Pods: []*corev1.Pod{pod("2026-09-14T08:12:40Z")}},
			wantErr: "start: 2026-01-05T00:00:00Z is before Pod shop/p's metadata.creationTimestamp 2026-09-14T08:12:40Z"},
		{name: "a given start before a claim's last pod event", start: "2026-09-14T09:00:00Z",
			set:     manifests.Set{NodeClaims: []*karpv1.NodeClaim{claim("2026-09-14T08:00:00Z", "2026-09-14T08:01:00Z", "2026-09-14T09:30:05Z")}},
			wantErr: "NodeClaim c's status.lastPodEventTime 2026-09-14T09:30:05Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := &Timeline{}
			if tc.start != "" {
				tl.Start = at(tc.start).Time
			}
			got, err := runStart(tl, &tc.set)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := got.Format(time.RFC3339); s != tc.want {
				t.Errorf("start %s, want %s", s, tc.want)
			}
		})
	}
}

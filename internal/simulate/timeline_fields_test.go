package simulate

import (
	"testing"
	"time"
)

// A key or value the timeline format does not take is refused with the
// event as users count them (from 1, with its time), the key, and for an
// unknown key the keys allowed there. Before, the error was only
// `json: unknown field "scael"`, which left the user to search the file.
func TestTimelineKeyErrorsNameTheEvent(t *testing.T) {
	const head = "duration: 10h\nevents:\n- at: 10m\n  jobs: {name: a, count: 1, duration: 20m}\n- at: 1h30m\n  jobs: {name: b, count: 1, duration: 20m}\n"
	const tail = "; see docs/simulate.md for the timeline format"
	cases := []struct {
		name, yaml string
		want       string // the whole error; "" for a file that is accepted
	}{
		{
			name: "unknown action of the third event",
			yaml: head + "- at: 6h\n  scael: {kind: Deployment, name: web, replicas: 3}\n",
			want: `tl.yaml: event 3 (at 6h): unknown key "scael"; the keys of an event are at, every, until, scale, jobs, nodePool, image` + tail,
		},
		{
			name: "unknown key inside an action",
			yaml: "duration: 10h\nevents:\n- at: 10m\n  jobs: {name: a, count: 1, duration: 20m}\n- at: 1h30m\n  jobs: {name: b, cpuu: \"1\", count: 1, duration: 20m}\n",
			want: `tl.yaml: event 2 (at 1h30m): jobs: unknown key "cpuu"; the keys of jobs are namespace, name, count, duration, cpu, memory, labels, annotations, nodeSelector` + tail,
		},
		{
			name: "unknown key of the timeline",
			yaml: "duration: 10h\nsteps: 1s\n",
			want: `tl.yaml: unknown key "steps"; the keys of a timeline are start, duration, step, sample, launchDelay, startupTaintDelay, events` + tail,
		},
		{
			name: "an event without at is named by every",
			yaml: "duration: 10h\nevents:\n- every: 10m\n  until: 2h\n  nodepool: {name: p, patch: {a: b}, force: true}\n",
			want: `tl.yaml: event 1 (every 10m): nodePool: unknown key "force"; the keys of nodePool are name, patch` + tail,
		},
		{
			name: "an event without a time is named by its number",
			yaml: "duration: 10h\nevents:\n- image: {nodeClass: c, image: i, tag: x}\n",
			want: `tl.yaml: event 1: image: unknown key "tag"; the keys of image are nodeClass, image` + tail,
		},
		{
			name: "a count given as a string",
			yaml: "duration: 10h\nevents:\n- at: 1h\n  scale: {kind: Deployment, name: web, replicas: \"3\"}\n",
			want: `tl.yaml: event 1 (at 1h): scale.replicas: got a string; give a whole number` + tail,
		},
		{
			name: "an annotation value not quoted",
			yaml: "duration: 10h\nevents:\n- at: 1h\n  jobs: {name: j, count: 1, duration: 5m, annotations: {karpenter.sh/do-not-disrupt: true}}\n",
			want: `tl.yaml: event 1 (at 1h): jobs.annotations[karpenter.sh/do-not-disrupt]: got true or false; give a string (quote it: "true", "1")` + tail,
		},
		{
			name: "a duration that does not parse",
			yaml: "duration: 10h\nevents:\n- at: 2h\n  every: 1 hour\n  scale: {kind: Deployment, name: web, delta: 1}\n",
			want: `tl.yaml: event 1 (at 2h): every: duration "1 hour": use a Go duration such as "90s", "6h" or "2d"` + tail,
		},
		{
			name: "a start that is not an instant",
			yaml: "start: monday\nduration: 10h\n",
			want: `tl.yaml: start: "monday" is not an RFC 3339 instant; give one such as "2026-01-05T00:00:00Z"` + tail,
		},
		{
			name: "events not a list",
			yaml: "duration: 10h\nevents: {at: 1h}\n",
			want: `tl.yaml: events: got a mapping; give a list` + tail,
		},
		{
			// encoding/json matches keys regardless of case; such files
			// were accepted and still are.
			name: "keys in another case",
			yaml: "Duration: 10h\nevents:\n- At: 1h\n  Scale: {Kind: Deployment, name: web, replicas: 3}\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl, err := ParseTimeline("tl.yaml", []byte(tc.yaml))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tl.Duration.Duration != 10*time.Hour || len(tl.Events) != 1 || tl.Events[0].Scale == nil {
					t.Fatalf("read as %+v", tl)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want %s", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n  %s\nwant\n  %s", err, tc.want)
			}
		})
	}
}

func TestEventLabel(t *testing.T) {
	d := func(s string) *Duration {
		v, err := parseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return &Duration{v}
	}
	cases := []struct {
		i         int
		at, every *Duration
		want      string
	}{
		{0, d("6h"), nil, "event 1 (at 6h)"},
		{2, d("1h30m"), d("10m"), "event 3 (at 1h30m)"},
		{3, d("90s"), nil, "event 4 (at 1m30s)"},
		{4, d("0s"), nil, "event 5 (at 0s)"},
		{5, d("2d"), nil, "event 6 (at 48h)"},
		{6, nil, d("10m"), "event 7 (every 10m)"},
		{7, nil, nil, "event 8"},
	}
	for _, tc := range cases {
		if got := eventLabel(tc.i, tc.at, tc.every); got != tc.want {
			t.Errorf("eventLabel(%d, %v, %v) = %q, want %q", tc.i, tc.at, tc.every, got, tc.want)
		}
	}
}

package simulate

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/manifests"
)

// run simulates the testdata manifests under a timeline given as YAML.
func run(t *testing.T, dir, timeline string) *Result {
	t.Helper()
	return simulateFiles(t, timeline, "testdata/"+dir)
}

// at returns the sample taken at d.
func at(t *testing.T, r *Result, d time.Duration) Sample {
	t.Helper()
	for _, s := range r.Samples {
		if s.At.Duration == d {
			return s
		}
	}
	t.Fatalf("no sample at %s", d)
	return Sample{}
}

func TestPendingPodsRunOnceLaunchedNodesRegister(t *testing.T) {
	r := run(t, "basic", "duration: 5m\nsample: 5s\nlaunchDelay: 45s\n")
	if s := at(t, r, 30*time.Second); s.PendingPods != 10 || s.Nodes != 0 || s.CostPerHour == 0 {
		t.Errorf("at 30s, before the launch delay: %+v; want 10 pending, no nodes yet, but launched claims billed", s)
	}
	if s := at(t, r, time.Minute); s.PendingPods != 0 || s.RunningPods != 10 || s.Nodes == 0 {
		t.Errorf("at 1m, after the launch delay: %+v; want all 10 running", s)
	}
	if r.Launched["provisioning"] == 0 || len(r.Nodes) == 0 {
		t.Errorf("launched %v, nodes %v", r.Launched, r.Nodes)
	}
}

func TestScaleToZeroRemovesEmptyNodesAfterConsolidateAfter(t *testing.T) {
	r := run(t, "basic", `
duration: 10m
sample: 10s
events:
- at: 2m
  scale: {kind: Deployment, name: web, replicas: 0}
`)
	if s := at(t, r, 2*time.Minute+20*time.Second); s.Nodes == 0 {
		t.Errorf("nodes went before consolidateAfter (30s): %+v", s)
	}
	if s := at(t, r, 4*time.Minute); s.Nodes != 0 || s.CostPerHour != 0 {
		t.Errorf("at 4m, empty nodes remain: %+v", s)
	}
	if r.Disruptions["Empty"] == 0 {
		t.Errorf("disruptions %v, want Empty ones", r.Disruptions)
	}
}

func TestImageUpdateDriftsAndReplacesEveryNode(t *testing.T) {
	r := run(t, "basic", `
duration: 30m
events:
- at: 5m
  image: {nodeClass: default, image: kwok-image-v2}
`)
	before := at(t, r, 4*time.Minute)
	if r.Disruptions["Drifted"] != before.Nodes {
		t.Errorf("drifted %d nodes, want all %d: %v", r.Disruptions["Drifted"], before.Nodes, r.Disruptions)
	}
	if s := at(t, r, 30*time.Minute); s.RunningPods != 10 || s.PendingPods != 0 {
		t.Errorf("after the drift: %+v; want the 10 pods running again", s)
	}
}

func TestJobsRunTheirDurationThenEnd(t *testing.T) {
	r := run(t, "basic", `
duration: 30m
events:
- at: 1m
  jobs: {name: batch, count: 4, duration: 10m, cpu: "2", memory: 1Gi}
`)
	if s := at(t, r, 5*time.Minute); s.RunningPods != 14 {
		t.Errorf("at 5m: %+v; want 10 web and 4 job pods running", s)
	}
	if s := at(t, r, 20*time.Minute); s.RunningPods != 10 {
		t.Errorf("at 20m: %+v; want the jobs done", s)
	}
	if r.Pods.Completed != 4 {
		t.Errorf("completed %d, want 4", r.Pods.Completed)
	}
}

func TestNodePoolPatchDriftsNodes(t *testing.T) {
	r := run(t, "basic", `
duration: 20m
events:
- at: 2m
  nodePool: {name: default, patch: {spec: {template: {metadata: {labels: {release: two}}}}}}
`)
	if r.Disruptions["Drifted"] == 0 {
		t.Errorf("disruptions %v, want Drifted after a template change", r.Disruptions)
	}
}

func TestSameInputSameOutput(t *testing.T) {
	tl := `
duration: 1h
events:
- every: 10m
  scale: {kind: Deployment, name: web, delta: 7}
- at: 30m
  jobs: {name: batch, count: 5, duration: 7m, cpu: "3"}
`
	a, _ := json.Marshal(run(t, "basic", tl))
	b, _ := json.Marshal(run(t, "basic", tl))
	if string(a) != string(b) {
		t.Error("two runs over the same input differ")
	}
}

func TestTimelineErrorsNameTheEventAndField(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"duration: 0s", "duration: must be positive"},
		{"duration: 1h\nstep: 1m", "step: 1m0s must be between 1s and 10s"},
		{"duration: 1h\nevents:\n- at: 2h\n  image: {nodeClass: a, image: b}", "event 1 (at 2h): at: 2h0m0s is outside the run"},
		{"duration: 1h\nevents:\n- at: 1m\n  scale: {kind: Pod, name: x, replicas: 1}", "event 1 (at 1m): scale.kind"},
		{"duration: 1h\nevents:\n- at: 1m", "event 1 (at 1m): has 0 actions"},
		{"duration: 1h\nevents:\n- at: 1m\n  jobs: {name: j, count: 1, duration: 1m, cpu: lots}", "event 1 (at 1m): jobs.cpu"},
		{"duration: 1h\nevents:\n- at: 1m\n  scael: {}", `event 1 (at 1m): unknown key "scael"`},
		{"duration: soon", "duration: duration \"soon\": use a Go duration"},
	}
	for _, tc := range cases {
		_, err := ParseTimeline("tl.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "tl.yaml: ") {
			t.Errorf("%q: error %v, want one starting with the file and holding %q", tc.yaml, err, tc.want)
		}
	}
}

func TestTimelineReferencesAreChecked(t *testing.T) {
	set, _ := manifests.Load("testdata/basic")
	tl, err := ParseTimeline("tl", []byte("duration: 1h\nevents:\n- at: 1m\n  scale: {kind: Deployment, name: api, replicas: 1}"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(set, Options{Timeline: tl}); err == nil || !strings.Contains(err.Error(), "event 1 (at 1m): scale: Deployment default/api is not in the manifests") {
		t.Errorf("error %v", err)
	}
}

func TestEveryRepeatsUntil(t *testing.T) {
	e := Event{At: &Duration{time.Hour}, Every: &Duration{time.Hour}, Until: &Duration{3 * time.Hour}}
	got := e.occurrences(24 * time.Hour)
	if len(got) != 3 || got[0] != time.Hour || got[2] != 3*time.Hour {
		t.Errorf("occurrences %v", got)
	}
}

func TestUnschedulablePodsReportTheSolversReason(t *testing.T) {
	r := run(t, "huge", "duration: 5m")
	if r.Pods.Pending != 1 || len(r.Pending) != 1 || r.Pending[0].Examples[0] != "default/huge" {
		t.Fatalf("pending %+v, groups %+v", r.Pods, r.Pending)
	}
	if reason := r.Pending[0].Reason; !strings.Contains(reason, "cpu") {
		t.Errorf("reason %q does not name the resource short", reason)
	}
	if !strings.Contains(r.Text(), "1 pending (default/huge)") {
		t.Errorf("text summary lacks the pending pod:\n%s", r.Text())
	}
}

func TestClusterDumpIsAdoptedAndDriftsToTheNewImage(t *testing.T) {
	r := run(t, "adopt", "duration: 10m\nsample: 10s")
	// At 0s the first disruption loop has already launched the replacement
	// (a c5.large at $0.085/h) next to the dumped m5.xlarge ($0.192/h).
	if s := at(t, r, 0); s.Nodes != 1 || s.RunningPods != 1 || s.PendingPods != 0 || s.CostPerHour != 0.277 {
		t.Errorf("at the start: %+v; want the dumped node, priced, with its pod running, and its replacement launching", s)
	}
	if s := at(t, r, 10*time.Minute); s.Nodes != 1 || s.CostPerHour != 0.085 {
		t.Errorf("at the end: %+v; want only the replacement", s)
	}
	if r.Disruptions["Drifted"] != 1 || r.Launched["replacement (Drifted)"] != 1 {
		t.Errorf("disruptions %v, launched %v; want the node on the old image replaced", r.Disruptions, r.Launched)
	}
	if r.Pods.Running != 1 || r.Pods.Pending != 0 {
		t.Errorf("pods at the end %+v", r.Pods)
	}
	// The dumped claim was created a day before the start: the run bills
	// it from the start, not for the day before. At most $0.277/h for 10m.
	if r.Cost < 0 || r.Cost > 0.05 {
		t.Errorf("cost $%.2f; want the 10 minutes of the run only", r.Cost)
	}
}

func TestTerminationGracePeriodBoundsADoNotDisruptDrain(t *testing.T) {
	r := run(t, "tgp", `
duration: 40m
events:
- at: 5m
  image: {nodeClass: default, image: kwok-image-v2}
`)
	if r.Disruptions["Drifted"] == 0 {
		t.Fatalf("disruptions %v: drift must proceed despite do-not-disrupt when terminationGracePeriod is set", r.Disruptions)
	}
	if s := at(t, r, 15*time.Minute); s.Nodes < 2 || s.RunningPods != 2 {
		t.Errorf("at 15m: %+v; want the old node still draining, its do-not-disrupt pods on it", s)
	}
	if s := at(t, r, 30*time.Minute); s.RunningPods != 2 || s.PendingPods != 0 || r.Pods.Evicted != 2 {
		t.Errorf("at 30m: %+v, evicted %d; want the pods forced off at the grace period and running again", s, r.Pods.Evicted)
	}
	if s := at(t, r, 30*time.Minute); s.Nodes != at(t, r, 4*time.Minute).Nodes {
		t.Errorf("at 30m %d nodes, before the drift %d; want the old ones gone", s.Nodes, at(t, r, 4*time.Minute).Nodes)
	}
}

func TestExpireAfterReplacesNodesOnTheVirtualClock(t *testing.T) {
	r := run(t, "basic", `
duration: 2h
events:
- at: 0s
  nodePool: {name: default, patch: {spec: {template: {spec: {expireAfter: 1h}}}}}
`)
	var first time.Duration
	for _, ev := range r.Events {
		if ev.Kind == "Expired" {
			first = ev.At.Duration
			break
		}
	}
	if first < time.Hour || first > time.Hour+2*time.Minute {
		t.Errorf("first expiration at %s, want just after 1h; events %v", first, r.Events)
	}
	if s := at(t, r, 2*time.Hour); s.RunningPods != 10 {
		t.Errorf("at 2h: %+v; want the pods running on new nodes", s)
	}
}

func TestDriftWaitsForTheBudgetWindow(t *testing.T) {
	// A budget that blocks drift from midnight for 9h: the image changes at
	// 1h, and nothing drifts until 09:00.
	r := run(t, "basic", `
duration: 10h
events:
- at: 0s
  nodePool: {name: default, patch: {spec: {disruption: {budgets: [
    {nodes: "100%"},
    {nodes: "0", reasons: [Drifted], schedule: "0 0 * * *", duration: 9h}]}}}}
- at: 1h
  image: {nodeClass: default, image: kwok-image-v2}
`)
	for _, ev := range r.Events {
		if ev.Kind == "Drifted" && ev.At.Duration < 9*time.Hour {
			t.Errorf("drift at %s, inside the blocking window: %s", ev.At.Duration, ev.Text)
		}
	}
	if r.Disruptions["Drifted"] == 0 {
		t.Errorf("nothing drifted once the window closed: %v", r.Disruptions)
	}
}

// TestStaticNodePoolKeepsItsReplicas: a static pool launches its replicas
// with no pod asking, keeps them empty (never consolidated, though
// consolidateAfter is 0s), scales down to the busy node when replicas are
// lowered, and a second pod runs on the replica left, with no node
// launched for it.
func TestStaticNodePoolKeepsItsReplicas(t *testing.T) {
	r := run(t, "static", `
duration: 10m
sample: 30s
events:
- at: 4m
  nodePool: {name: static, patch: {spec: {replicas: 1}}}
- at: 6m
  scale: {kind: Deployment, name: web, replicas: 2}
`)
	if s := at(t, r, 3*time.Minute); s.Nodes != 3 || s.RunningPods != 1 {
		t.Errorf("at 3m: %+v; want 3 replicas kept, one pod running", s)
	}
	if s := at(t, r, 5*time.Minute); s.Nodes != 1 || s.RunningPods != 1 || s.PendingPods != 0 {
		t.Errorf("at 5m, after scaling to 1: %+v; want the busy node kept", s)
	}
	if s := at(t, r, 7*time.Minute); s.Nodes != 1 || s.RunningPods != 2 {
		t.Errorf("at 7m: %+v; want both pods on the one replica", s)
	}
	if r.Launched["static"] != 3 || r.Launched["provisioning"] != 0 {
		t.Errorf("launched %v, want 3 static replicas and nothing for pods", r.Launched)
	}
	if r.Disruptions["ScaledDown"] != 2 || r.Disruptions["Empty"] != 0 || r.Disruptions["Underutilized"] != 0 {
		t.Errorf("disruptions %v, want 2 ScaledDown and no consolidation", r.Disruptions)
	}
}

package termination

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func claim(opts ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", DeletionTimestamp: &metav1.Time{Time: now.Add(-10 * time.Second)}}}
	for _, o := range opts {
		o(nc)
	}
	return nc
}

func tgp(d time.Duration) func(*karpv1.NodeClaim) {
	return func(nc *karpv1.NodeClaim) { nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: d} }
}

func annotated(v string) func(*karpv1.NodeClaim) {
	return func(nc *karpv1.NodeClaim) {
		nc.Annotations = map[string]string{karpv1.NodeClaimTerminationTimestampKey: v}
	}
}

func readyNode() *corev1.Node {
	n, _ := Prepare(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	return n
}

func pod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	grace := int64(30)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)},
		Spec:       corev1.PodSpec{NodeName: "n", TerminationGracePeriodSeconds: &grace},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func daemon(p *corev1.Pod) {
	yes := true
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds", Controller: &yes})
}

func critical(p *corev1.Pod) { p.Spec.PriorityClassName = "system-node-critical" }

func doNotDisrupt(p *corev1.Pod) {
	p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
}

func terminating(ago time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.DeletionTimestamp = &metav1.Time{Time: now.Add(-ago)}
		g := int64(30)
		p.DeletionGracePeriodSeconds = &g
	}
}

func graceSeconds(s int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &s }
}

func withClaim(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	}
}

func attachment(name, pv string) *storagev1.VolumeAttachment {
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.VolumeAttachmentSpec{NodeName: "n", Attacher: "csi.example.com"}}
	if pv != "" {
		va.Spec.Source.PersistentVolumeName = &pv
	}
	return va
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func deletions(ds []Deletion) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s/%d", d.Pod.Name, d.GracePeriodSeconds))
	}
	return out
}

func reasons(states []PodState) []string {
	out := []string{}
	for _, s := range states {
		out = append(out, s.Pod.Name+": "+s.Reason)
	}
	sort.Strings(out)
	return out
}

func TestDrainOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pods    []*corev1.Pod
		evict   []string
		waiting []string
	}{
		{
			name:    "workload pods go first, DaemonSet and critical pods wait",
			pods:    []*corev1.Pod{pod("ds", daemon), pod("web"), pod("crit", critical), pod("critds", critical, daemon), pod("api")},
			evict:   []string{"api", "web"},
			waiting: []string{"api: being evicted", "crit: waits for an earlier wave", "critds: waits for an earlier wave", "ds: waits for an earlier wave", "web: being evicted"},
		},
		{
			name:    "DaemonSet pods go once workloads are gone",
			pods:    []*corev1.Pod{pod("ds", daemon), pod("crit", critical), pod("critds", critical, daemon)},
			evict:   []string{"ds"},
			waiting: []string{"crit: waits for an earlier wave", "critds: waits for an earlier wave", "ds: being evicted"},
		},
		{
			name:    "critical workloads before critical DaemonSet pods",
			pods:    []*corev1.Pod{pod("crit", critical), pod("critds", critical, daemon)},
			evict:   []string{"crit"},
			waiting: []string{"crit: being evicted", "critds: waits for an earlier wave"},
		},
		{
			name:    "critical DaemonSet pods last",
			pods:    []*corev1.Pod{pod("critds", critical, daemon)},
			evict:   []string{"critds"},
			waiting: []string{"critds: being evicted"},
		},
		{
			name:    "a terminating pod holds the next wave back",
			pods:    []*corev1.Pod{pod("web", terminating(10*time.Second)), pod("ds", daemon)},
			evict:   []string{},
			waiting: []string{"ds: waits for an earlier wave", "web: terminating"},
		},
		{
			name:    "do-not-disrupt pods are waited for, not evicted, and hold the next wave back",
			pods:    []*corev1.Pod{pod("ci", doNotDisrupt), pod("web"), pod("ds", daemon)},
			evict:   []string{"web"},
			waiting: []string{"ci: has karpenter.sh/do-not-disrupt", "ds: waits for an earlier wave", "web: being evicted"},
		},
		{
			name:    "a do-not-disrupt DaemonSet pod waits in its own wave",
			pods:    []*corev1.Pod{pod("ds", daemon, doNotDisrupt), pod("ds2", daemon)},
			evict:   []string{"ds2"},
			waiting: []string{"ds2: being evicted", "ds: has karpenter.sh/do-not-disrupt"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(Input{Claim: claim(), Node: readyNode(), Pods: tc.pods, Now: now})
			if got := names(p.Evict); !reflect.DeepEqual(got, tc.evict) {
				t.Errorf("Evict = %v, want %v", got, tc.evict)
			}
			if got := reasons(p.Waiting); !reflect.DeepEqual(got, tc.waiting) {
				t.Errorf("Waiting = %v, want %v", got, tc.waiting)
			}
			if p.Drained || p.Finished() {
				t.Errorf("drained with pods left to wait for")
			}
			if len(p.Delete) != 0 {
				t.Errorf("deleted %v without a terminationGracePeriod", deletions(p.Delete))
			}
		})
	}
}

func TestDrainSkips(t *testing.T) {
	tolerateAll := func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} }
	tolerateDisrupted := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	tolerateOther := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "other", Operator: corev1.TolerationOpExists}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		skip string
	}{
		{"succeeded", pod("p", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), SkipTerminal},
		{"failed", pod("p", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), SkipTerminal},
		{"mirror by annotation", pod("p", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }), SkipMirror},
		{"mirror by owner", pod("p", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n", UID: "n"}}
		}), SkipMirror},
		{"tolerates everything", pod("p", daemon, tolerateAll), SkipTolerates},
		{"tolerates the disrupted taint", pod("p", tolerateDisrupted), SkipTolerates},
		{"stuck terminating", pod("p", terminating(61*time.Second)), SkipStuckTerminating},
		{"terminating within a minute", pod("p", terminating(59*time.Second)), ""},
		{"tolerates another taint", pod("p", tolerateOther), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Skip(tc.pod, now, time.Minute); got != tc.skip {
				t.Fatalf("Skip = %q, want %q", got, tc.skip)
			}
			p := Decide(Input{Claim: claim(), Node: readyNode(), Pods: []*corev1.Pod{tc.pod}, Now: now})
			if p.Drained != (tc.skip != "") {
				t.Fatalf("Drained = %v with a pod skipped for %q", p.Drained, tc.skip)
			}
		})
	}
}

func TestNodeIsPreparedOnce(t *testing.T) {
	bare := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "other", Effect: corev1.TaintEffectNoSchedule}}}}
	p := Decide(Input{Claim: claim(), Node: bare, Now: now})
	if !p.PrepareNode {
		t.Fatal("an untainted node must be prepared")
	}
	out, changed := Prepare(bare)
	if !changed || len(out.Spec.Taints) != 2 || !out.Spec.Taints[1].MatchTaint(&karpv1.DisruptedNoScheduleTaint) ||
		out.Labels[corev1.LabelNodeExcludeBalancers] == "" {
		t.Fatalf("Prepare = taints %v labels %v", out.Spec.Taints, out.Labels)
	}
	if _, again := Prepare(out); again {
		t.Fatal("Prepare changed a prepared node")
	}
	if len(bare.Spec.Taints) != 1 {
		t.Fatal("Prepare changed its input")
	}
	if p := Decide(Input{Claim: claim(), Node: out, Now: now}); p.PrepareNode || !p.Finished() {
		t.Fatalf("empty prepared node: PrepareNode %v Finished %v", p.PrepareNode, p.Finished())
	}
}

func TestNoNodeFinishesAtOnce(t *testing.T) {
	p := Decide(Input{Claim: claim(), Now: now})
	if !p.Drained || !p.Finished() || p.PrepareNode {
		t.Fatalf("claim without a node: %+v", p)
	}
}

func TestDeadline(t *testing.T) {
	deleted := now.Add(-10 * time.Second)
	for _, tc := range []struct {
		name     string
		claim    *karpv1.NodeClaim
		want     time.Time
		annotate bool
	}{
		{"none", claim(), time.Time{}, false},
		{"from terminationGracePeriod", claim(tgp(time.Minute)), deleted.Add(time.Minute), true},
		{"already annotated", claim(tgp(time.Minute), annotated(FormatDeadline(deleted.Add(time.Minute)))), deleted.Add(time.Minute), false},
		{"an earlier annotation wins", claim(tgp(time.Minute), annotated(FormatDeadline(deleted))), deleted, false},
		{"a later annotation is replaced", claim(tgp(time.Minute), annotated(FormatDeadline(deleted.Add(time.Hour)))), deleted.Add(time.Minute), true},
		{"an unparsable annotation is replaced", claim(tgp(time.Minute), annotated("soon")), deleted.Add(time.Minute), true},
		{"an annotation alone", claim(annotated(FormatDeadline(deleted.Add(time.Hour)))), deleted.Add(time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, annotate := Deadline(tc.claim)
			if !got.Equal(tc.want) || annotate != tc.annotate {
				t.Fatalf("Deadline = %s, %v; want %s, %v", got, annotate, tc.want, tc.annotate)
			}
		})
	}
}

func TestTerminationGracePeriodDeletesInTime(t *testing.T) {
	// The claim was deleted 10s ago; deadline = deletion + grace period.
	for _, tc := range []struct {
		name     string
		grace    time.Duration // of the claim
		pods     []*corev1.Pod
		deletes  []string
		evict    []string
		recheck  time.Time
		drained  bool
		finished bool
	}{
		{
			name:    "not yet due: evict as usual, come back when a deletion falls due",
			grace:   70 * time.Second, // deadline in 60s; 30s pods fall due in 29s
			pods:    []*corev1.Pod{pod("web"), pod("ci", doNotDisrupt)},
			deletes: []string{},
			evict:   []string{"web"},
			recheck: now.Add(29 * time.Second),
		},
		{
			name:    "due: delete with what is left of the deadline, do-not-disrupt included",
			grace:   30 * time.Second, // deadline in 20s
			pods:    []*corev1.Pod{pod("ci", doNotDisrupt), pod("ds", daemon), pod("short", graceSeconds(5))},
			deletes: []string{"ci/20", "ds/20"},
			evict:   []string{"short"},
			recheck: now.Add(14 * time.Second),
		},
		{
			name:    "at its due time a pod gets all of its grace period",
			grace:   41 * time.Second, // deadline in 31s; a 30s pod falls due now
			pods:    []*corev1.Pod{pod("web")},
			deletes: []string{"web/30"},
			evict:   []string{},
			recheck: now.Add(31 * time.Second),
		},
		{
			name:    "a pod terminating past the deadline is deleted again with less grace",
			grace:   30 * time.Second,
			pods:    []*corev1.Pod{pod("slow", terminating(-25*time.Second)), pod("ok", terminating(-5*time.Second))},
			deletes: []string{"slow/20"},
			evict:   []string{},
			recheck: now.Add(20 * time.Second),
		},
		{
			name:     "past the deadline: everything left goes at once and nothing is waited for",
			grace:    5 * time.Second,
			pods:     []*corev1.Pod{pod("ci", doNotDisrupt), pod("web", terminating(time.Second)), pod("gone", terminating(time.Second), func(p *corev1.Pod) { *p.DeletionGracePeriodSeconds = 0 })},
			deletes:  []string{"ci/0", "web/0"},
			evict:    []string{},
			drained:  true,
			finished: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Claim: claim(tgp(tc.grace)), Node: readyNode(), Pods: tc.pods, Now: now,
				VolumeAttachments: []*storagev1.VolumeAttachment{attachment("va", "pv")}}
			p := Decide(in)
			if got := deletions(p.Delete); !reflect.DeepEqual(got, tc.deletes) {
				t.Errorf("Delete = %v, want %v", got, tc.deletes)
			}
			if got := names(p.Evict); !reflect.DeepEqual(got, tc.evict) {
				t.Errorf("Evict = %v, want %v", got, tc.evict)
			}
			if !p.RecheckAt.Equal(tc.recheck) {
				t.Errorf("RecheckAt = %s, want %s", p.RecheckAt, tc.recheck)
			}
			if p.Drained != tc.drained || p.Finished() != tc.finished {
				t.Errorf("Drained %v Finished %v, want %v %v", p.Drained, p.Finished(), tc.drained, tc.finished)
			}
			if tc.finished && (p.PendingVolumes != nil || !p.GraceElapsed) {
				t.Errorf("after the deadline volumes are not waited for: %v", p.PendingVolumes)
			}
		})
	}
}

func TestRecheckWhenATerminatingPodStopsBeingWaitedFor(t *testing.T) {
	p := Decide(Input{Claim: claim(), Node: readyNode(), Pods: []*corev1.Pod{pod("web", terminating(20*time.Second))}, Now: now, StuckAfter: time.Minute})
	if want := now.Add(41 * time.Second); !p.RecheckAt.Equal(want) {
		t.Fatalf("RecheckAt = %s, want %s", p.RecheckAt, want)
	}
}

func TestVolumeWait(t *testing.T) {
	tolerant := pod("agent", withClaim("agent-data"), func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	})
	done := pod("job", withClaim("job-data"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })
	claimed := map[types.NamespacedName]string{
		{Namespace: "default", Name: "agent-data"}: "pv-agent",
		{Namespace: "default", Name: "job-data"}:   "pv-job",
	}
	other := attachment("elsewhere", "pv-x")
	other.Spec.NodeName = "other"
	for _, tc := range []struct {
		name    string
		pods    []*corev1.Pod
		vas     []*storagev1.VolumeAttachment
		pending []string
	}{
		{"no attachments", nil, nil, nil},
		{"a persistent volume is waited for", nil, []*storagev1.VolumeAttachment{attachment("va", "pv")}, []string{"va"}},
		{"inline volumes are not", nil, []*storagev1.VolumeAttachment{attachment("inline", "")}, nil},
		{"another node's are not", nil, []*storagev1.VolumeAttachment{other}, nil},
		{"those of pods left on the node are not", []*corev1.Pod{tolerant}, []*storagev1.VolumeAttachment{attachment("va", "pv-agent")}, nil},
		{"those of finished pods are", []*corev1.Pod{done}, []*storagev1.VolumeAttachment{attachment("va", "pv-job")}, []string{"va"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(Input{Claim: claim(), Node: readyNode(), Pods: tc.pods, VolumeAttachments: tc.vas, ClaimedVolumes: claimed, Now: now})
			var got []string
			for _, va := range p.PendingVolumes {
				got = append(got, va.Name)
			}
			if !p.Drained || !reflect.DeepEqual(got, tc.pending) || p.Finished() != (len(tc.pending) == 0) {
				t.Fatalf("Drained %v PendingVolumes %v Finished %v, want %v", p.Drained, got, p.Finished(), tc.pending)
			}
		})
	}
	// While pods are still draining, volumes are not looked at yet.
	p := Decide(Input{Claim: claim(), Node: readyNode(), Pods: []*corev1.Pod{pod("web")},
		VolumeAttachments: []*storagev1.VolumeAttachment{attachment("va", "pv")}, Now: now})
	if p.PendingVolumes != nil {
		t.Fatalf("volumes checked before the drain ended: %v", p.PendingVolumes)
	}
}

func TestClaimsOf(t *testing.T) {
	p := pod("web", withClaim("data"), func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes,
			corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}})
	})
	want := []types.NamespacedName{{Namespace: "default", Name: "data"}, {Namespace: "default", Name: "web-scratch"}}
	if got := ClaimsOf(p); !reflect.DeepEqual(got, want) {
		t.Fatalf("ClaimsOf = %v, want %v", got, want)
	}
}

func TestRetriesBackOffPerPod(t *testing.T) {
	r := newRetries(time.Second, 4*time.Second)
	if !r.due("c", "a", now) {
		t.Fatal("a pod never refused is due")
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		if got := r.failed("c", "a", now); !got.Equal(now.Add(want)) {
			t.Fatalf("refusal %d: next try at +%s, want +%s", i+1, got.Sub(now), want)
		}
	}
	if r.due("c", "a", now.Add(3*time.Second)) || !r.due("c", "a", now.Add(4*time.Second)) || !r.due("c", "b", now) {
		t.Fatal("due ignores the backoff or mixes pods up")
	}
	if got := r.next("c", now); !got.Equal(now.Add(4 * time.Second)) {
		t.Fatalf("next = %s", got)
	}
	r.succeeded("c", "a")
	if !r.next("c", now).IsZero() || !r.due("c", "a", now) {
		t.Fatal("success does not reset the backoff")
	}
}

func TestDoNotDisruptForADurationExpires(t *testing.T) {
	heldFor := func(age time.Duration) *corev1.Pod {
		return pod("ci", func(p *corev1.Pod) {
			p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "30m"}
			p.CreationTimestamp = metav1.NewTime(now.Add(-age))
		})
	}
	p := Decide(Input{Claim: claim(), Node: readyNode(), Pods: []*corev1.Pod{heldFor(10 * time.Minute)}, Now: now})
	if len(p.Evict) != 0 || !p.RecheckAt.Equal(now.Add(20*time.Minute)) {
		t.Fatalf("a pod held for 20 more minutes: Evict %v RecheckAt %s", names(p.Evict), p.RecheckAt)
	}
	p = Decide(Input{Claim: claim(), Node: readyNode(), Pods: []*corev1.Pod{heldFor(40 * time.Minute)}, Now: now})
	if got := names(p.Evict); !reflect.DeepEqual(got, []string{"ci"}) {
		t.Fatalf("a pod whose do-not-disrupt expired: Evict %v", got)
	}
}

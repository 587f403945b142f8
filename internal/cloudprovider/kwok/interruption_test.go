package kwok

import (
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/internal/cloudprovider"
)

func TestParseInterrupt(t *testing.T) {
	for _, tc := range []struct {
		kind, window string
		want         cloudprovider.InterruptionKind
		after        time.Duration
		err          string
	}{
		{"spot", "", cloudprovider.SpotInterruption, 2 * time.Minute, ""},
		{"SpotInterruption", "", cloudprovider.SpotInterruption, 2 * time.Minute, ""},
		{" Spot ", "30s", cloudprovider.SpotInterruption, 30 * time.Second, ""},
		{"maintenance", "", cloudprovider.ScheduledChange, DefaultMaintenanceWindow, ""},
		{"ScheduledMaintenance", "1h", cloudprovider.ScheduledChange, time.Hour, ""},
		{"maintenance", "0s", cloudprovider.ScheduledChange, 0, ""},
		{"rebalance", "", cloudprovider.RebalanceRecommendation, 0, ""},
		{"Rebalance", "5m", cloudprovider.RebalanceRecommendation, 0, ""}, // ends nothing, window or not
		{"reboot", "", "", 0, `annotation nodewright.dev/kwok-interrupt: unknown interruption "reboot"`},
		{"", "", "", 0, "annotation nodewright.dev/kwok-interrupt: unknown"},
		{"spot", "soon", "", 0, "annotation nodewright.dev/kwok-interrupt-window"},
		{"maintenance", "-1m", "", 0, "annotation nodewright.dev/kwok-interrupt-window: -1m is negative"},
	} {
		k, d, err := parseInterrupt(tc.kind, tc.window)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseInterrupt(%q, %q) error %v, want one containing %q", tc.kind, tc.window, err, tc.err)
			}
			continue
		}
		if err != nil || k != tc.want || d != tc.after {
			t.Errorf("parseInterrupt(%q, %q) = %s, %v, %v; want %s, %v", tc.kind, tc.window, k, d, err, tc.want, tc.after)
		}
	}
}

func TestNotice(t *testing.T) {
	now := epoch
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	for _, tc := range []struct {
		name            string
		node, claim     map[string]string
		want            interruptionRecord
		ok              bool
		errContains     string
		wantTerminateAt *time.Time
	}{
		{name: "nothing asked", node: map[string]string{}, claim: map[string]string{}},
		{name: "on the Node", node: map[string]string{InterruptAnnotation: "spot"}, ok: true,
			want: interruptionRecord{Kind: cloudprovider.SpotInterruption, NoticeAt: now, TerminateAt: at(2 * time.Minute)}},
		{name: "on the NodeClaim, with a window", claim: map[string]string{InterruptAnnotation: "maintenance", InterruptWindowAnnotation: "5m"}, ok: true,
			want: interruptionRecord{Kind: cloudprovider.ScheduledChange, NoticeAt: now, TerminateAt: at(5 * time.Minute)}},
		{name: "the Node's request wins", node: map[string]string{InterruptAnnotation: "rebalance"}, claim: map[string]string{InterruptAnnotation: "spot"}, ok: true,
			want: interruptionRecord{Kind: cloudprovider.RebalanceRecommendation, NoticeAt: now}},
		{name: "the window comes with its request", node: map[string]string{InterruptAnnotation: "spot"},
			claim: map[string]string{InterruptWindowAnnotation: "1h"}, ok: true,
			want: interruptionRecord{Kind: cloudprovider.SpotInterruption, NoticeAt: now, TerminateAt: at(2 * time.Minute)}},
		{name: "already issued: once per Node", node: map[string]string{InterruptAnnotation: "spot", InterruptionAnnotation: "{}"}},
		{name: "unknown kind is recorded as refused", node: map[string]string{InterruptAnnotation: "meteor"}, ok: true,
			want: interruptionRecord{NoticeAt: now, Error: `annotation nodewright.dev/kwok-interrupt: unknown interruption "meteor": use spot, maintenance or rebalance`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, ok := notice(tc.node, tc.claim, now)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if encodeInterruption(rec) != encodeInterruption(tc.want) {
				t.Errorf("notice = %s, want %s", encodeInterruption(rec), encodeInterruption(tc.want))
			}
		})
	}
}

func TestUndeliveredAndDue(t *testing.T) {
	node := func(ann map[string]string) *corev1.Node {
		a := map[string]string{NodeClaimAnnotation: "n"}
		for k, v := range ann {
			a[k] = v
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: a}, Spec: corev1.NodeSpec{ProviderID: "kwok://n"}}
	}
	end := epoch.Add(2 * time.Minute)
	spot := encodeInterruption(interruptionRecord{Kind: cloudprovider.SpotInterruption, NoticeAt: epoch, TerminateAt: &end})
	refused := encodeInterruption(interruptionRecord{NoticeAt: epoch, Error: "annotation x: bad"})
	for _, tc := range []struct {
		name      string
		node      *corev1.Node
		delivered bool
		kind      cloudprovider.InterruptionKind
		err       string
		due       bool // at +2m
	}{
		{name: "no notice", node: node(nil)},
		{name: "spot notice", node: node(map[string]string{InterruptionAnnotation: spot}), delivered: true, kind: cloudprovider.SpotInterruption, due: true},
		{name: "handled already", node: node(map[string]string{InterruptionAnnotation: spot, InterruptionDeliveredAnnotation: "x"}), due: true},
		{name: "refused request", node: node(map[string]string{InterruptionAnnotation: refused}), delivered: true, err: "annotation x: bad"},
		{name: "garbled record", node: node(map[string]string{InterruptionAnnotation: "{"}), delivered: true, err: "annotation nodewright.dev/kwok-interruption"},
		{name: "not an instance", node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{InterruptionAnnotation: spot}}}, due: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := undelivered(tc.node)
			if ok != tc.delivered {
				t.Fatalf("delivered %v, want %v", ok, tc.delivered)
			}
			switch {
			case tc.err != "":
				if m.Err == nil || !strings.Contains(m.Err.Error(), tc.err) {
					t.Errorf("message error %v, want one containing %q", m.Err, tc.err)
				}
			case ok:
				if m.Err != nil || m.Event.Kind != tc.kind || len(m.Event.InstanceIDs) != 1 || m.Event.InstanceIDs[0] != "n" {
					t.Errorf("message %+v, want a %s event for instance n", m, tc.kind)
				}
			}
			rec, _, _ := recordOf(tc.node)
			if got := terminationDue(rec, end); got != tc.due {
				t.Errorf("due at +2m = %v, want %v", got, tc.due)
			}
			if terminationDue(rec, end.Add(-time.Nanosecond)) {
				t.Errorf("due before +2m")
			}
		})
	}
}

// TestInterruptionFault plays a spot interruption asked on a Node through
// the agent and the source: the notice is issued once, delivered until
// acknowledged, and the instance terminated when the two minutes are up. A
// maintenance request on a NodeClaim takes its window, and an unknown kind
// is refused with a Warning event naming the annotation.
func TestInterruptionFault(t *testing.T) {
	rec := record.NewFakeRecorder(20)
	e := newEnv(t, ProviderOptions{Recorder: rec, AgentInterval: time.Millisecond})
	class := e.nodeClass(nil)
	spot := e.mustLaunch(e.claim(class))
	maint := e.mustLaunch(e.claim(class))
	bad := e.mustLaunch(e.claim(class))
	annotate := func(obj client.Object, kv ...string) {
		t.Helper()
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		a := obj.GetAnnotations()
		for i := 0; i < len(kv); i += 2 {
			a[kv[i]] = kv[i+1]
		}
		obj.SetAnnotations(a)
		if err := e.c.Update(e.ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	annotate(e.mustNode(spot.Name), InterruptAnnotation, "spot")
	annotate(maint, InterruptAnnotation, "maintenance", InterruptWindowAnnotation, "5m")
	annotate(e.mustNode(bad.Name), InterruptAnnotation, "meteor")
	src := e.p.Interruptions()

	e.sync(e.p, 10*time.Second)
	ours := func(msgs []cloudprovider.InterruptionMessage) map[string]cloudprovider.InterruptionMessage {
		out := map[string]cloudprovider.InterruptionMessage{}
		for _, m := range msgs {
			for _, n := range []string{spot.Name, maint.Name, bad.Name} {
				if strings.HasPrefix(m.ID, "kwok-"+n+"-") {
					out[n] = m
				}
			}
		}
		return out
	}
	// Receive reads the informer cache, which sees the agent's writes a
	// little later (much later under the race detector): poll until the
	// three notices are there.
	got := map[string]cloudprovider.InterruptionMessage{}
	for deadline := time.Now().Add(10 * time.Second); len(got) < 3 && time.Now().Before(deadline); {
		msgs, err := src.Receive(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(got, ours(msgs))
	}
	if m := got[spot.Name]; m.Err != nil || m.Event.Kind != cloudprovider.SpotInterruption || m.Event.InstanceIDs[0] != spot.Name {
		t.Errorf("spot message %+v", m)
	}
	if m := got[maint.Name]; m.Err != nil || m.Event.Kind != cloudprovider.ScheduledChange {
		t.Errorf("maintenance message %+v", m)
	}
	if m := got[bad.Name]; m.Err == nil || !strings.Contains(m.Err.Error(), InterruptAnnotation) {
		t.Errorf("refused request's message %+v, want an error naming %s", m, InterruptAnnotation)
	}
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	if joined := strings.Join(events, "\n"); strings.Count(joined, InterruptionNoticeReason) != 2 ||
		!strings.Contains(joined, "Warning "+InterruptionInvalidReason+" annotation "+InterruptAnnotation+`: unknown interruption "meteor"`) {
		t.Errorf("events:\n%s\nwant two notices and a warning naming the annotation", joined)
	}

	// Issued once: a later pass changes nothing.
	before := e.mustNode(spot.Name).Annotations[InterruptionAnnotation]
	e.sync(e.p, 20*time.Second)
	if after := e.mustNode(spot.Name).Annotations[InterruptionAnnotation]; after != before {
		t.Errorf("notice changed on a later pass: %s -> %s", before, after)
	}
	// Acknowledged messages are not delivered again, not even by a
	// restarted controller's source.
	for _, m := range got {
		if err := m.Ack(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []cloudprovider.InterruptionSource{src, e.restart().Interruptions()} {
		again, err := s.Receive(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if left := ours(again); len(left) != 0 {
			t.Errorf("delivered again after acknowledgement: %v", left)
		}
	}

	// The spot instance goes two minutes after its notice, the maintained
	// one after its five, the refused one never.
	e.sync(e.p, 10*time.Second+2*time.Minute-time.Millisecond)
	if e.node(spot.Name) == nil {
		t.Fatalf("spot instance terminated before its two minutes")
	}
	e.sync(e.p, 10*time.Second+2*time.Minute)
	if n := e.node(spot.Name); n != nil && n.DeletionTimestamp == nil {
		t.Errorf("spot instance not terminated two minutes after its notice")
	}
	if e.node(maint.Name) == nil {
		t.Errorf("maintained instance terminated before its window ended")
	}
	e.sync(e.p, 10*time.Second+5*time.Minute)
	if n := e.node(maint.Name); n != nil && n.DeletionTimestamp == nil {
		t.Errorf("maintained instance not terminated when its window ended")
	}
	if e.node(bad.Name) == nil {
		t.Errorf("instance of a refused request was terminated")
	}
}

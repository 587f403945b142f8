package kwok

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
)

func TestParseUnhealthy(t *testing.T) {
	for _, tc := range []struct {
		value   string
		want    unhealthyFault
		wantErr string
	}{
		{"", unhealthyFault{corev1.NodeReady, corev1.ConditionFalse}, ""},
		{"Ready", unhealthyFault{corev1.NodeReady, corev1.ConditionFalse}, ""},
		{" Ready = unknown ", unhealthyFault{corev1.NodeReady, corev1.ConditionUnknown}, ""},
		{"MemoryPressure", unhealthyFault{corev1.NodeMemoryPressure, corev1.ConditionTrue}, ""},
		{"KernelDeadlock=Unknown", unhealthyFault{"KernelDeadlock", corev1.ConditionUnknown}, ""},
		{"Ready=True", unhealthyFault{}, "is healthy"},
		{"DiskPressure=false", unhealthyFault{}, "is healthy"},
		{"Ready=Maybe", unhealthyFault{}, "True, False or Unknown"},
		{"not ready", unhealthyFault{}, "not a condition type"},
	} {
		got, err := parseUnhealthy(tc.value)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), UnhealthyAnnotation) {
				t.Errorf("%q: error %v, want one naming %s and saying %q", tc.value, err, UnhealthyAnnotation, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.value, err)
		case got != tc.want:
			t.Errorf("%q: %+v, want %+v", tc.value, got, tc.want)
		}
	}
}

func TestPlanUnhealthy(t *testing.T) {
	now := epoch.Add(time.Hour)
	earlier := metav1.NewTime(epoch)
	cond := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, Reason: reason, LastTransitionTime: earlier, LastHeartbeatTime: earlier}
	}
	ready := cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")
	held := map[string]string{NotReadyLabel: "true"}
	since := map[string]string{UnhealthySinceAnnotation: epoch.Format(time.RFC3339)}
	ask := func(v string, more map[string]string) map[string]string {
		out := map[string]string{UnhealthyAnnotation: v}
		for k, x := range more {
			out[k] = x
		}
		return out
	}
	// want is a plan's shape: the conditions as type=status/reason, and
	// whether the broken one changed at epoch (kept, or backdated) rather
	// than now.
	type want struct {
		held, hold, release, err bool
		conds                    []string
		fromEpoch                bool
	}
	for _, tc := range []struct {
		name        string
		labels, ann map[string]string
		conds       []corev1.NodeCondition
		want        want
	}{
		{name: "not asked: nothing", conds: []corev1.NodeCondition{ready}},
		{name: "a notReady window's Node is not ours", labels: held,
			conds: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse, NotReadyReason)}},
		{name: "asked: held, labelled, Ready=False from now", ann: ask("", nil), conds: []corev1.NodeCondition{ready},
			want: want{held: true, hold: true, conds: []string{"Ready=False/" + UnhealthyReason}}},
		{name: "held already: nothing more, transition time kept", labels: held, ann: ask("Ready", since),
			conds: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse, UnhealthyReason)}, want: want{held: true}},
		{name: "label lost: put back", ann: ask("Ready", since),
			conds: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse, UnhealthyReason)}, want: want{held: true, hold: true}},
		{name: "kwok or a window wrote False: the fault's reason, the transition time kept", ann: ask("Ready", nil),
			conds: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse, NotReadyReason)},
			want:  want{held: true, hold: true, conds: []string{"Ready=False/" + UnhealthyReason}, fromEpoch: true}},
		{name: "since set by hand: the fault backdated", ann: ask("Ready", since), conds: []corev1.NodeCondition{ready},
			want: want{held: true, hold: true, conds: []string{"Ready=False/" + UnhealthyReason}, fromEpoch: true}},
		{name: "since in the future: from now", ann: ask("Ready", map[string]string{UnhealthySinceAnnotation: now.Add(time.Hour).Format(time.RFC3339)}),
			conds: []corev1.NodeCondition{ready}, want: want{held: true, hold: true, conds: []string{"Ready=False/" + UnhealthyReason}}},
		{name: "Unknown", ann: ask("Ready=Unknown", nil), conds: []corev1.NodeCondition{ready},
			want: want{held: true, hold: true, conds: []string{"Ready=Unknown/" + UnhealthyReason}}},
		{name: "a condition the Node lacks is added", ann: ask("KernelDeadlock", nil), conds: []corev1.NodeCondition{ready},
			want: want{held: true, hold: true, conds: []string{"KernelDeadlock=True/" + UnhealthyReason}}},
		{name: "value changed: the old condition mended, the new broken since the fault began", labels: held, ann: ask("MemoryPressure", since),
			conds: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse, UnhealthyReason), cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "")},
			want:  want{held: true, conds: []string{"Ready=True/" + HealedReason, "MemoryPressure=True/" + UnhealthyReason}, fromEpoch: true}},
		{name: "annotation removed: released and mended", labels: held, ann: since,
			conds: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse, UnhealthyReason), cond("KernelDeadlock", corev1.ConditionTrue, UnhealthyReason)},
			want:  want{release: true, conds: []string{"Ready=True/" + HealedReason, "KernelDeadlock=False/" + HealedReason}}},
		{name: "invalid value on a healthy Node: an error, nothing held", ann: ask("Ready=Maybe", nil), conds: []corev1.NodeCondition{ready},
			want: want{err: true}},
		{name: "invalid value on a held Node: released", labels: held, ann: ask("Ready=Maybe", since),
			conds: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse, UnhealthyReason)},
			want:  want{err: true, release: true, conds: []string{"Ready=True/" + HealedReason}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: tc.labels, Annotations: tc.ann},
				Status: corev1.NodeStatus{Conditions: tc.conds}}
			got := planUnhealthy(node, now)
			var conds []string
			for _, c := range got.Conditions {
				conds = append(conds, string(c.Type)+"="+string(c.Status)+"/"+c.Reason)
				if !c.LastHeartbeatTime.Time.Equal(now) {
					t.Errorf("%s heartbeat %v, want now", c.Type, c.LastHeartbeatTime)
				}
				if c.Reason == UnhealthyReason {
					if at := c.LastTransitionTime.Time; at.Equal(epoch) != tc.want.fromEpoch || (!tc.want.fromEpoch && !at.Equal(now)) {
						t.Errorf("%s changed at %v; want epoch %v, else now", c.Type, at, tc.want.fromEpoch)
					}
				}
			}
			if got.Held != tc.want.held || got.Hold != tc.want.hold || got.Release != tc.want.release || (got.Err != nil) != tc.want.err ||
				strings.Join(conds, ",") != strings.Join(tc.want.conds, ",") {
				t.Errorf("plan held %v hold %v release %v err %v conditions %v; want %+v", got.Held, got.Hold, got.Release, got.Err, conds, tc.want)
			}
		})
	}
}

// TestUnhealthyFaultHoldsUntilRemoved: the agent breaks Ready and keeps it
// broken, from the first transition, past the end of the class's notReady
// window and across a restart, until the annotation goes.
func TestUnhealthyFaultHoldsUntilRemoved(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	class := e.nodeClass(&kwokv1alpha1.KWOKFaults{NotReady: &kwokv1alpha1.KWOKNotReadyFault{
		After: metav1.Duration{Duration: 30 * time.Second}, For: metav1.Duration{Duration: time.Minute}}})
	claim := e.mustLaunch(e.claim(class))
	e.kwokReportsReady(claim.Name)
	annotate := func(v *string) {
		t.Helper()
		node := e.mustNode(claim.Name)
		orig := node.DeepCopy()
		if v == nil {
			delete(node.Annotations, UnhealthyAnnotation)
		} else {
			node.Annotations[UnhealthyAnnotation] = *v
		}
		if err := e.c.Patch(e.ctx, node, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(at time.Duration, label bool, status corev1.ConditionStatus, reason string, since time.Duration) {
		t.Helper()
		node := e.mustNode(claim.Name)
		_, l := node.Labels[NotReadyLabel]
		r := readyCondition(node)
		if l != label || r == nil || r.Status != status || r.Reason != reason {
			t.Fatalf("at +%v: label %v, Ready %+v; want label %v, %s/%s", at, l, r, label, status, reason)
		}
		if since >= 0 && !r.LastTransitionTime.Time.Equal(epoch.Add(since)) {
			t.Errorf("at +%v: Ready changed at %v, want +%v", at, r.LastTransitionTime, since)
		}
	}

	v := "Ready"
	annotate(&v)
	e.sync(e.p, 10*time.Second)
	check(10*time.Second, true, corev1.ConditionFalse, UnhealthyReason, 10*time.Second)
	if got := e.mustNode(claim.Name).Annotations[UnhealthySinceAnnotation]; got != epoch.Add(10*time.Second).Format(time.RFC3339) {
		t.Errorf("%s = %q", UnhealthySinceAnnotation, got)
	}
	// The window opens and closes while the fault holds: neither touches the
	// Node, and a restarted controller holds it as well.
	for _, at := range []time.Duration{45 * time.Second, 2 * time.Minute} {
		e.sync(e.restart(), at)
		check(at, true, corev1.ConditionFalse, UnhealthyReason, 10*time.Second)
	}

	annotate(nil)
	e.sync(e.p, 3*time.Minute)
	check(3*time.Minute, false, corev1.ConditionTrue, HealedReason, 3*time.Minute)
	node := e.mustNode(claim.Name)
	if _, ok := node.Annotations[UnhealthySinceAnnotation]; ok {
		t.Errorf("%s still on the released Node", UnhealthySinceAnnotation)
	}
	// The window that passed during the fault is recorded, not replayed.
	e.sync(e.p, 3*time.Minute+time.Second)
	check(3*time.Minute+time.Second, false, corev1.ConditionTrue, HealedReason, -1)
	if _, done := e.mustNode(claim.Name).Annotations[NotReadyDoneAnnotation]; !done {
		t.Error("the notReady window that passed during the fault is not recorded as done")
	}
}

func TestRepairPolicies(t *testing.T) {
	for _, tc := range []struct {
		toleration, want time.Duration
	}{
		{0, DefaultRepairToleration},
		{-time.Second, DefaultRepairToleration},
		{20 * time.Second, 20 * time.Second},
	} {
		p, err := New(cluster.Client, ProviderOptions{RepairToleration: tc.toleration})
		if err != nil {
			t.Fatal(err)
		}
		got := p.RepairPolicies()
		if len(got) != 2 {
			t.Fatalf("toleration %v: %d policies, want Ready False and Unknown", tc.toleration, len(got))
		}
		for i, s := range []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionUnknown} {
			if got[i].ConditionType != corev1.NodeReady || got[i].ConditionStatus != s || got[i].Toleration != tc.want {
				t.Errorf("toleration %v: policy %d is %+v, want Ready=%s for %v", tc.toleration, i, got[i], s, tc.want)
			}
		}
	}
}

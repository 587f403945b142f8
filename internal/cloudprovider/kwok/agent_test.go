package kwok

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
)

// readyCondition returns the Node's Ready condition, or nil.
func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// kwokReportsReady does what kwok does for a Node it animates.
func (e *env) kwokReportsReady(name string) {
	e.t.Helper()
	node := e.mustNode(name)
	orig := node.DeepCopy()
	now := metav1.NewTime(e.clock.Now())
	cond := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now}
	if c := readyCondition(node); c != nil {
		*c = cond
	} else {
		node.Status.Conditions = append(node.Status.Conditions, cond)
	}
	if err := e.c.Status().Patch(e.ctx, node, client.StrategicMergeFrom(orig)); err != nil {
		e.t.Fatal(err)
	}
}

func TestNotReadyWindowComesOnce(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	class := e.nodeClass(&kwokv1alpha1.KWOKFaults{NotReady: &kwokv1alpha1.KWOKNotReadyFault{
		After: metav1.Duration{Duration: 30 * time.Second}, For: metav1.Duration{Duration: time.Minute}}})
	claim := e.mustLaunch(e.claim(class))
	e.kwokReportsReady(claim.Name)

	type want struct {
		label, done bool
		ready       corev1.ConditionStatus
	}
	check := func(at time.Duration, w want) {
		t.Helper()
		node := e.mustNode(claim.Name)
		_, label := node.Labels[NotReadyLabel]
		_, done := node.Annotations[NotReadyDoneAnnotation]
		ready := readyCondition(node)
		if label != w.label || done != w.done || ready == nil || ready.Status != w.ready {
			t.Fatalf("at +%v: label %v done %v Ready %+v; want %+v", at, label, done, ready, w)
		}
		if w.ready == corev1.ConditionFalse && ready.Reason != NotReadyReason {
			t.Errorf("at +%v: Ready=False reason %q", at, ready.Reason)
		}
	}
	e.sync(e.p, 29*time.Second)
	check(29*time.Second, want{ready: corev1.ConditionTrue})
	e.sync(e.p, 30*time.Second)
	check(30*time.Second, want{label: true, ready: corev1.ConditionFalse})
	e.sync(e.p, 50*time.Second) // repeated passes hold the state
	check(50*time.Second, want{label: true, ready: corev1.ConditionFalse})

	// The controller restarts during the window; the new one closes it.
	restarted := e.restart()
	e.sync(restarted, 89*time.Second)
	check(89*time.Second, want{label: true, ready: corev1.ConditionFalse})
	e.sync(restarted, 90*time.Second)
	check(90*time.Second, want{done: true, ready: corev1.ConditionFalse})

	// kwok reports the Node Ready again, and the window does not return.
	e.kwokReportsReady(claim.Name)
	for _, at := range []time.Duration{91 * time.Second, 10 * time.Minute} {
		e.sync(e.restart(), at)
		check(at, want{done: true, ready: corev1.ConditionTrue})
	}
}

func TestNotReadyWindowMissedWhileDown(t *testing.T) {
	e := newEnv(t, ProviderOptions{DefaultFaults: kwokv1alpha1.KWOKFaults{NotReady: &kwokv1alpha1.KWOKNotReadyFault{
		After: metav1.Duration{Duration: 30 * time.Second}, For: metav1.Duration{Duration: time.Minute}}}})
	claim := e.mustLaunch(e.claim(e.nodeClass(nil)))
	e.kwokReportsReady(claim.Name)
	e.sync(e.p, 5*time.Minute)
	node := e.mustNode(claim.Name)
	if _, done := node.Annotations[NotReadyDoneAnnotation]; !done {
		t.Error("a missed window is not recorded as done")
	}
	if _, label := node.Labels[NotReadyLabel]; label || readyCondition(node).Status != corev1.ConditionTrue {
		t.Errorf("a missed window changed the Node: labels %v conditions %v", node.Labels, node.Status.Conditions)
	}
}

func TestAgentTaintRemovedAfterDelay(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	cilium := corev1.Taint{Key: ciliumTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	stuck := corev1.Taint{Key: "example.com/storage", Effect: corev1.TaintEffectNoExecute}
	class := e.nodeClass(&kwokv1alpha1.KWOKFaults{AgentTaints: []kwokv1alpha1.KWOKAgentTaint{
		{Key: cilium.Key, Value: cilium.Value, Effect: cilium.Effect, RemoveAfter: duration(20 * time.Second)},
		{Key: stuck.Key, Effect: stuck.Effect},
	}})
	claim := e.mustLaunch(e.claim(class))
	taints := func() []corev1.Taint { return withoutAdmissionTaints(e.mustNode(claim.Name).Spec.Taints) }

	e.sync(e.p, 19*time.Second)
	if got := taints(); !slices.Contains(got, cilium) || !slices.Contains(got, stuck) {
		t.Fatalf("at +19s taints %v, want both agent taints", got)
	}
	e.sync(e.p, 20*time.Second)
	got := taints()
	if slices.Contains(got, cilium) {
		t.Errorf("at +20s the agent taint is still there: %v", got)
	}
	if !slices.Contains(got, stuck) || len(got) != 2 { // stuck and unregistered
		t.Errorf("at +20s taints %v, want the stuck agent's and unregistered", got)
	}

	// Registration re-applies the NodePool's startup taints; a ready agent
	// removes its own again.
	node := e.mustNode(claim.Name)
	node.Spec.Taints = append(node.Spec.Taints, cilium)
	if err := e.c.Update(e.ctx, node); err != nil {
		t.Fatal(err)
	}
	e.sync(e.restart(), time.Minute)
	if got := taints(); slices.Contains(got, cilium) || !slices.Contains(got, stuck) {
		t.Errorf("after the taint came back: %v", got)
	}
}

// TestAgentRunnableTicks runs the agent as the manager would and waits for
// a delayed Node to appear.
func TestAgentRunnableTicks(t *testing.T) {
	e := newEnv(t, ProviderOptions{AgentInterval: time.Second})
	claim := e.mustLaunch(e.claim(e.nodeClass(&kwokv1alpha1.KWOKFaults{RegistrationDelay: duration(5 * time.Second)})))
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- e.p.Agent().Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent returned %v", err)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for e.node(claim.Name) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no Node after 30s; fake clock at %v", e.clock.Now())
		}
		if e.clock.HasWaiters() {
			e.clock.Step(time.Second)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if at := e.clock.Since(epoch); at < 5*time.Second {
		t.Errorf("Node created at +%v, before the 5s delay", at)
	}
}

func TestQuiet(t *testing.T) {
	node := func(ann map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: ann,
			Labels: map[string]string{NotReadyLabel: "true"}}}
	}
	claim := func(ann map[string]string) *karpv1.NodeClaim {
		return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: ann}}
	}
	tests := []struct {
		name  string
		node  *corev1.Node
		claim *karpv1.NodeClaim
		want  bool
	}{
		{"plain node, no claim", node(nil), nil, true},
		{"plain node and claim; the label alone asks nothing", node(map[string]string{CreatedAtAnnotation: "x", NotReadyDoneAnnotation: "x"}), claim(map[string]string{LaunchedAtAnnotation: "x"}), true},
		{"faults stored", node(map[string]string{FaultsAnnotation: "{}"}), nil, false},
		{"unhealthy asked", node(map[string]string{UnhealthyAnnotation: "Ready=False"}), nil, false},
		{"unhealthy being released", node(map[string]string{UnhealthySinceAnnotation: "x"}), nil, false},
		{"interruption asked of the node", node(map[string]string{InterruptAnnotation: "spot"}), nil, false},
		{"interruption under way", node(map[string]string{InterruptionAnnotation: "{}"}), nil, false},
		{"interruption asked of the claim", node(nil), claim(map[string]string{InterruptAnnotation: "spot"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := quiet(tt.node, tt.claim); got != tt.want {
				t.Errorf("quiet = %v, want %v", got, tt.want)
			}
		})
	}
}

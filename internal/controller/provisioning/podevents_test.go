package provisioning

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func eventPod(name, uid, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: node}}
}

// A pod still waiting when its turn comes is told its NodeClaim; a pod
// bound, gone, or replaced by another of the same name is not.
func TestNominationEventsSkipPodsNoLongerWaiting(t *testing.T) {
	waiting, bound, replaced := eventPod("waiting", "u1", ""), eventPod("bound", "u2", "node-a"), eventPod("replaced", "u4-new", "")
	reader := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(waiting, bound, replaced).Build()
	rec := record.NewFakeRecorder(10)
	e := newNominationEvents(reader, rec, 1000)
	e.add("claim-a", []*corev1.Pod{waiting, bound, eventPod("gone", "u3", ""), eventPod("replaced", "u4-old", "")})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		sent, dropped := e.counts()
		if sent+dropped == 4 {
			if sent != 1 || dropped != 3 {
				t.Fatalf("sent %d, dropped %d; want 1 and 3", sent, dropped)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 4 handled after 10s", sent+dropped)
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := <-rec.Events
	if want := "Normal Nominated Pod should schedule on: nodeclaim/claim-a"; got != want {
		t.Errorf("event %q, want %q", got, want)
	}
	select {
	case extra := <-rec.Events:
		t.Errorf("unexpected event %q", extra)
	default:
	}
}

// Events go out at most qps a second: a burst of 15 at 5 a second (bucket of
// 5) takes at least two seconds, in nomination order.
func TestNominationEventsArePaced(t *testing.T) {
	var pods []*corev1.Pod
	builder := fake.NewClientBuilder().WithScheme(scheme.Scheme)
	for i := range 15 {
		p := eventPod(strings.Repeat("p", i+1), strings.Repeat("u", i+1), "")
		pods = append(pods, p)
		builder = builder.WithObjects(p)
	}
	rec := record.NewFakeRecorder(20)
	e := newNominationEvents(builder.Build(), rec, 5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	e.add("claim-b", pods)
	go e.run(ctx)
	for i := range 15 {
		select {
		case <-rec.Events:
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d not sent after 10s", i+1)
		}
	}
	if took := time.Since(start); took < 1900*time.Millisecond {
		t.Errorf("15 events at 5/s (bucket 5) took %s, want at least 2s", took)
	}
	if sent, dropped := e.counts(); sent != 15 || dropped != 0 {
		t.Errorf("sent %d, dropped %d; want 15 and 0", sent, dropped)
	}
}

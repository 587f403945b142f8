package provisioning

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func eventPod(name, uid, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: node}}
}

// A pod still waiting when its turn comes is told its NodeClaim; a pod
// bound, gone, or replaced by another of the same name is not. Both ways of
// reading the pod, a cached client and the informer's store, decide alike.
func TestNominationEventsSkipPodsNoLongerWaiting(t *testing.T) {
	waiting, bound, replaced := eventPod("waiting", "u1", ""), eventPod("bound", "u2", "node-a"), eventPod("replaced", "u4-new", "")
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	for _, p := range []*corev1.Pod{waiting, bound, replaced} {
		if err := store.Add(p.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		reader podGetter
	}{
		{name: "cached client", reader: fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(waiting, bound, replaced).Build()},
		{name: "informer store", reader: storePods{store: store}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkSkipsPodsNoLongerWaiting(t, tc.reader, waiting, bound) })
	}
}

// checkSkipsPodsNoLongerWaiting nominates waiting, bound, a gone pod and
// a replaced one through reader, and wants only waiting's event sent.
func checkSkipsPodsNoLongerWaiting(t *testing.T, reader podGetter, waiting, bound *corev1.Pod) {
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

// storePods reads what an informer's store holds, and says NotFound as a
// cached client does, so the events drop a pod that is gone.
func TestStorePods(t *testing.T) {
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	if err := store.Add(eventPod("waiting", "u1", "")); err != nil {
		t.Fatal(err)
	}
	r := storePods{store: store}
	for _, tc := range []struct {
		name     string
		key      types.NamespacedName
		obj      client.Object
		wantUID  types.UID
		notFound bool
		fails    bool
	}{
		{name: "stored", key: types.NamespacedName{Namespace: "ns", Name: "waiting"}, obj: &corev1.Pod{}, wantUID: "u1"},
		{name: "another namespace", key: types.NamespacedName{Namespace: "other", Name: "waiting"}, obj: &corev1.Pod{}, notFound: true},
		{name: "gone", key: types.NamespacedName{Namespace: "ns", Name: "gone"}, obj: &corev1.Pod{}, notFound: true},
		{name: "not a pod", key: types.NamespacedName{Namespace: "ns", Name: "waiting"}, obj: &corev1.Node{}, fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.Get(context.Background(), tc.key, tc.obj)
			switch {
			case tc.notFound:
				if !apierrors.IsNotFound(err) {
					t.Errorf("error %v, want NotFound", err)
				}
			case tc.fails:
				if err == nil || apierrors.IsNotFound(err) {
					t.Errorf("error %v, want a failure that is not NotFound", err)
				}
			case err != nil:
				t.Errorf("error %v", err)
			case tc.obj.(*corev1.Pod).UID != tc.wantUID:
				t.Errorf("read UID %q, want %q", tc.obj.(*corev1.Pod).UID, tc.wantUID)
			}
		})
	}
}

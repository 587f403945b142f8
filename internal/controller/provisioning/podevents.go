package provisioning

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// DefaultPodEventQPS is how many Nominated events a second the provisioner
// sends at most.
const DefaultPodEventQPS = 50

// nominationEvents sends each nominated pod's Nominated event from a queue,
// at most qps a second, and drops the event of a pod that is bound or gone
// when its turn comes. A pod that waits for its node is told where it will
// go, as before; a pod bound a second later needs no event, since
// kube-scheduler's Scheduled event says where it went. Sent at once, one POST
// per pod (40,000 at 40,000 pods) competed with kube-scheduler's bindings
// for the API server.
type nominationEvents struct {
	cache    podGetter
	recorder record.EventRecorder
	limiter  flowcontrol.RateLimiter

	mu      sync.Mutex
	queue   []nomination
	wake    chan struct{}
	dropped int // events not sent: the pod was bound or gone by its turn
	sent    int
}

type nomination struct {
	key   types.NamespacedName
	uid   types.UID
	claim string
}

// podGetter reads one pod, for the events to read only: a cached client,
// or storePods.
type podGetter interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
}

// storePods reads pods from an informer's store as they are there. A cached
// client's Get deep-copies the pod, and the events read one pod per
// nomination (10,000 at 10,000 pods); in a 10,000-pod run's CPU profile
// those copies were 6% of the controller's CPU.
type storePods struct{ store toolscache.Store }

// Get fills obj, a *corev1.Pod, with a shallow copy of the stored pod: its
// maps and slices are the store's, so the caller must not change them.
func (s storePods) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("reading %s from the pod store: a %T is no pod", key, obj)
	}
	item, exists, err := s.store.GetByKey(key.String())
	if err != nil {
		return fmt.Errorf("reading pod %s from the informer's store: %w", key, err)
	}
	if !exists {
		return apierrors.NewNotFound(corev1.Resource("pods"), key.Name)
	}
	stored, ok := item.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("reading pod %s from the informer's store: it holds a %T", key, item)
	}
	*pod = *stored
	return nil
}

func newNominationEvents(cache podGetter, rec record.EventRecorder, qps float32) *nominationEvents {
	if qps <= 0 {
		qps = DefaultPodEventQPS
	}
	return &nominationEvents{cache: cache, recorder: rec, wake: make(chan struct{}, 1),
		limiter: flowcontrol.NewTokenBucketRateLimiter(qps, max(1, int(qps)))}
}

// add queues the Nominated events of pods nominated to claim.
func (e *nominationEvents) add(claim string, pods []*corev1.Pod) {
	if len(pods) == 0 {
		return
	}
	e.mu.Lock()
	for _, p := range pods {
		e.queue = append(e.queue, nomination{key: client.ObjectKeyFromObject(p), uid: p.UID, claim: claim})
	}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// run sends queued events until ctx ends. Events still queued then are
// dropped: the next leader nominates, and tells, again.
func (e *nominationEvents) run(ctx context.Context) {
	for {
		n, ok := e.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-e.wake:
				continue
			}
		}
		if err := e.limiter.Wait(ctx); err != nil {
			return
		}
		e.send(ctx, n)
	}
}

func (e *nominationEvents) next() (nomination, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.queue) == 0 {
		e.queue = nil // let a burst's backing array go
		return nomination{}, false
	}
	n := e.queue[0]
	e.queue = e.queue[1:]
	return n, true
}

// send records the event unless the pod is bound, gone or another pod of
// the same name now.
func (e *nominationEvents) send(ctx context.Context, n nomination) {
	var pod corev1.Pod
	err := e.cache.Get(ctx, n.key, &pod)
	if err != nil && !apierrors.IsNotFound(err) {
		log.FromContext(ctx).V(1).Info("not sending Nominated event: reading the pod failed", "pod", n.key, "error", err.Error())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil || pod.UID != n.uid || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		e.dropped++
		return
	}
	e.sent++
	e.recorder.Eventf(&pod, corev1.EventTypeNormal, "Nominated", "Pod should schedule on: nodeclaim/%s", n.claim)
}

// counts returns how many events were sent and dropped so far.
func (e *nominationEvents) counts() (sent, dropped int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sent, e.dropped
}

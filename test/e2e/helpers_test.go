package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/testkube"
)

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}}
}

// nodeClass creates a KWOKNodeClass with the given faults.
func nodeClass(t *testing.T, name string, faults *kwokv1alpha1.KWOKFaults) {
	t.Helper()
	nc := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kwokv1alpha1.KWOKNodeClassSpec{Faults: faults}}
	if err := kc.Create(context.Background(), nc); err != nil {
		t.Fatalf("creating KWOKNodeClass %s: %v", name, err)
	}
}

// nodePool creates a NodePool of on-demand machines that never consolidates,
// so every node a test sees was launched for its pods.
func nodePool(t *testing.T, name, class string, mutate func(*karpv1.NodePool)) *karpv1.NodePool {
	t.Helper()
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: class},
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand")},
			}},
			Disruption: karpv1.Disruption{ConsolidateAfter: karpv1.MustParseNillableDuration("Never")},
		},
	}
	if mutate != nil {
		mutate(np)
	}
	if err := kc.Create(context.Background(), np); err != nil {
		t.Fatalf("creating NodePool %s: %v", name, err)
	}
	return np
}

func namespace(t *testing.T, name string) {
	t.Helper()
	if err := kc.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

type podShape struct {
	cpu, memory string
	extra       corev1.ResourceList
	mutate      func(*corev1.PodSpec)
	annotations map[string]string // on the pod template
}

// deployment creates a Deployment whose pods carry app=name.
func deployment(t *testing.T, ns, name string, replicas int32, selector map[string]string, shape podShape) {
	t.Helper()
	labels := map[string]string{"app": name}
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(shape.cpu), corev1.ResourceMemory: resource.MustParse(shape.memory)}
	limits := corev1.ResourceList{}
	for k, v := range shape.extra {
		requests[k] = v
		limits[k] = v
	}
	spec := corev1.PodSpec{
		NodeSelector:                  selector,
		TerminationGracePeriodSeconds: ptr(int64(0)),
		Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}},
	}
	if shape.mutate != nil {
		shape.mutate(&spec)
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: shape.annotations}, Spec: spec},
		},
	}
	if err := kc.Create(context.Background(), d); err != nil {
		t.Fatalf("creating Deployment %s/%s: %v", ns, name, err)
	}
}

func ptr[T any](v T) *T { return &v }

// podCounts counts a namespace's pods that are Running on a node, and the rest.
func podCounts(ns string) (running, other int, err error) { return testkube.PodCounts(kc, ns) }

// waitRunning waits until want pods of ns are Running, bound by kube-scheduler.
func waitRunning(t *testing.T, ns string, want int, timeout time.Duration) {
	t.Helper()
	testkube.WaitRunning(t, kc, ns, want, timeout)
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	testkube.Eventually(t, timeout, what, cond)
}

// claimsOf lists a NodePool's NodeClaims; every NodeClaim for pool "".
func claimsOf(pool string) ([]karpv1.NodeClaim, error) {
	var l karpv1.NodeClaimList
	var opts []client.ListOption
	if pool != "" {
		opts = append(opts, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	}
	err := kc.List(context.Background(), &l, opts...)
	return l.Items, err
}

// claimRecorder remembers every NodeClaim of a pool it ever saw, polling
// until stopped, so a claim created and deleted between two looks at the end
// is still counted.
type claimRecorder struct {
	pool  string
	mu    sync.Mutex
	names map[string]karpv1.NodeClaim
	// first holds each claim's nominations as first seen, normally a
	// quarter second at most after its creation: the pods it was launched
	// for.
	first map[string]string
	// nominated holds every pod UID each claim's nominations ever named.
	nominated map[string]map[types.UID]bool
	stop      chan struct{}
	done      chan struct{}
}

func recordClaims(pool string) *claimRecorder {
	r := &claimRecorder{pool: pool, names: map[string]karpv1.NodeClaim{}, first: map[string]string{}, nominated: map[string]map[types.UID]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			r.look()
			select {
			case <-r.stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return r
}

// look records the pool's claims as they are now; a failed list is skipped.
func (r *claimRecorder) look() {
	cs, err := claimsOf(r.pool)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		if _, ok := r.names[c.Name]; !ok {
			r.first[c.Name] = c.Annotations[snapshot.NominatedPodsAnnotation]
		}
		r.names[c.Name] = c
		if r.nominated[c.Name] == nil {
			r.nominated[c.Name] = map[types.UID]bool{}
		}
		for _, uid := range snapshot.Nominations(c.Annotations[snapshot.NominatedPodsAnnotation]) {
			r.nominated[c.Name][uid] = true
		}
	}
}

// Seen stops recording and returns the names of every claim seen, sorted,
// the claims there at this moment included: a test whose claim came and
// settled within a few polls, while lists were slow or failing (a busy API
// server, parallel tests), counted it as never seen.
func (r *claimRecorder) Seen() []string {
	close(r.stop)
	<-r.done
	r.look()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.names))
	for n := range r.names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// describeClaims is for failure messages.
func describeClaims(pool string) string {
	cs, err := claimsOf(pool)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "\n  %s %s node=%s nominated=%d conditions=", c.Name, c.Labels[corev1.LabelInstanceTypeStable], c.Status.NodeName,
			len(snapshot.Nominations(c.Annotations[snapshot.NominatedPodsAnnotation])))
		for _, cond := range c.Status.Conditions {
			fmt.Fprintf(&b, "%s=%s(%s) ", cond.Type, cond.Status, cond.Message)
		}
	}
	return b.String()
}

// nodesOf lists the nodes of a NodePool.
func nodesOf(pool string) ([]corev1.Node, error) {
	var l corev1.NodeList
	err := kc.List(context.Background(), &l, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	return l.Items, err
}

// workloadPodsPerNode counts non-DaemonSet pods bound to each node.
func workloadPodsPerNode() (map[string]int, error) {
	var pods corev1.PodList
	if err := kc.List(context.Background(), &pods); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && !snapshot.IsDaemonSetPod(&p) && p.DeletionTimestamp == nil {
			out[p.Spec.NodeName]++
		}
	}
	return out, nil
}

// Last returns the last state seen of every claim; recording goes on.
func (r *claimRecorder) Last() claimStates {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(claimStates, len(r.names))
	for k, v := range r.names {
		out[k] = v
	}
	return out
}

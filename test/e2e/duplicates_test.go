package e2e

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// relaunch is a pod that a second NodeClaim was launched for while the
// first one still held it: created before the first initialized, or within
// the grace after.
type relaunch struct {
	pod       types.UID
	prev, cur karpv1.NodeClaim
}

func (r relaunch) String() string {
	return fmt.Sprintf("pod %s launched for by %s and again by %s", r.pod, r.prev.Name, r.cur.Name)
}

// Relaunches stops recording and lists the pods two NodeClaims were launched
// for while the first still held them (see relaunch). A pod planned again
// after its nomination lapsed is not one.
func (r *claimRecorder) Relaunches(grace time.Duration) []relaunch {
	r.Seen()
	r.mu.Lock()
	defer r.mu.Unlock()
	launchedFor := map[types.UID][]string{}
	for name, noms := range r.first {
		for _, uid := range snapshot.Nominations(noms) {
			launchedFor[uid] = append(launchedFor[uid], name)
		}
	}
	var out []relaunch
	for uid, names := range launchedFor {
		sort.Slice(names, func(i, j int) bool {
			return r.names[names[i]].CreationTimestamp.Time.Before(r.names[names[j]].CreationTimestamp.Time)
		})
		for i := 1; i < len(names); i++ {
			prev, cur := r.names[names[i-1]], r.names[names[i]]
			init := meta.FindStatusCondition(prev.Status.Conditions, karpv1.ConditionTypeInitialized)
			if init == nil || init.Status != metav1.ConditionTrue || cur.CreationTimestamp.Time.Before(init.LastTransitionTime.Add(grace)) {
				out = append(out, relaunch{pod: uid, prev: prev, cur: cur})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// displacementSlack is how long before a NodeClaim's creation the
// controller may have read the cluster it planned it on: a pod bound
// elsewhere within it may still have counted as waiting for its node.
const displacementSlack = 10 * time.Second

// displacement judges relaunches by what the pods ended up doing. With
// --replan-displaced-pods (the default) the controller plans a pod again
// before the grace ends once its claim's node has initialized and the pods
// bound to that node leave too little room for the pods still nominated to
// it. Such a relaunch is a displacement, not a duplicate, when that was so
// by the pods' own record: the pods bound to the node by the time the second
// claim was made (their PodScheduled time), together with the pods the first
// claim nominated that were not yet bound anywhere, do not fit the node's
// allocatable.
type displacement struct {
	pods  map[types.UID]*corev1.Pod
	alloc map[string]corev1.ResourceList
	noms  map[string]map[types.UID]bool
}

// newDisplacement reads the pods of ns and the nodes now.
func newDisplacement(r *claimRecorder, ns string) (*displacement, error) {
	var pods corev1.PodList
	if err := kc.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing pods of %s: %w", ns, err)
	}
	var nodes corev1.NodeList
	if err := kc.List(context.Background(), &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	d := &displacement{pods: map[types.UID]*corev1.Pod{}, alloc: map[string]corev1.ResourceList{}, noms: map[string]map[types.UID]bool{}}
	for i := range pods.Items {
		d.pods[pods.Items[i].UID] = &pods.Items[i]
	}
	for _, n := range nodes.Items {
		d.alloc[n.Name] = n.Status.Allocatable
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, uids := range r.nominated {
		d.noms[name] = uids
	}
	return d, nil
}

// displaced reports whether rl is a displacement.
func (d *displacement) displaced(rl relaunch) bool {
	init := meta.FindStatusCondition(rl.prev.Status.Conditions, karpv1.ConditionTypeInitialized)
	node := rl.prev.Status.NodeName
	alloc, ok := d.alloc[node]
	// Timestamps are whole seconds: a second either way.
	at := rl.cur.CreationTimestamp.Time.Add(time.Second)
	if init == nil || init.Status != metav1.ConditionTrue || !ok || init.LastTransitionTime.Time.After(at) {
		return false
	}
	var cpu, mem resource.Quantity
	count := 0
	add := func(p *corev1.Pod) {
		for _, c := range p.Spec.Containers {
			cpu.Add(*c.Resources.Requests.Cpu())
			mem.Add(*c.Resources.Requests.Memory())
		}
		count++
	}
	for _, p := range d.pods {
		if p.Spec.NodeName == node && !scheduledAfter(p, at) {
			add(p)
		}
	}
	for uid := range d.noms[rl.prev.Name] {
		p, ok := d.pods[uid]
		if !ok || (p.Spec.NodeName == node && !scheduledAfter(p, at)) {
			continue // gone, or counted as bound
		}
		if p.Spec.NodeName != "" && !scheduledAfter(p, rl.cur.CreationTimestamp.Time.Add(-displacementSlack)) {
			continue // bound elsewhere well before
		}
		add(p)
	}
	pods, limited := alloc[corev1.ResourcePods]
	return cpu.Cmp(*alloc.Cpu()) > 0 || mem.Cmp(*alloc.Memory()) > 0 || (limited && int64(count) > pods.Value())
}

// scheduledAfter reports whether p was bound after t, or not at all.
func scheduledAfter(p *corev1.Pod, t time.Time) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time.After(t)
		}
	}
	return true
}

// TestDisplacementJudge checks the judge on made-up records; it needs no
// cluster.
func TestDisplacementJudge(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	initialized := func(at time.Time) []metav1.Condition {
		return []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
	}
	pod := func(uid, cpu, node string, scheduled time.Time) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
		if node != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(scheduled)}}
		}
		return p
	}
	cases := []struct {
		name string
		init []metav1.Condition
		pods []*corev1.Pod
		want bool
	}{
		{"bound pods leave no room for the nominated one", initialized(t0), []*corev1.Pod{pod("x", "1500m", "n1", t0.Add(5*time.Second)), pod("p", "1", "", time.Time{})}, true},
		{"room left: a duplicate", initialized(t0), []*corev1.Pod{pod("x", "500m", "n1", t0.Add(5*time.Second)), pod("p", "1", "", time.Time{})}, false},
		{"node not initialized: a duplicate", nil, []*corev1.Pod{pod("x", "1500m", "n1", t0.Add(5*time.Second)), pod("p", "1", "", time.Time{})}, false},
		{"bound only after the second claim: a duplicate", initialized(t0), []*corev1.Pod{pod("x", "1500m", "n1", t0.Add(time.Minute)), pod("p", "1", "", time.Time{})}, false},
		{"a nominated pod bound elsewhere long before holds no room", initialized(t0), []*corev1.Pod{pod("x", "1", "n1", t0.Add(5*time.Second)), pod("q", "1", "n2", t0), pod("p", "500m", "", time.Time{})}, false},
		{"a nominated pod bound elsewhere just before still counts", initialized(t0), []*corev1.Pod{pod("x", "1", "n1", t0.Add(5*time.Second)), pod("q", "1", "n2", t0.Add(25*time.Second)), pod("p", "500m", "", time.Time{})}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &displacement{pods: map[types.UID]*corev1.Pod{}, alloc: map[string]corev1.ResourceList{
				"n1": {corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("10")}},
				noms: map[string]map[types.UID]bool{"a": {"p": true, "q": true}}}
			for _, p := range tc.pods {
				d.pods[p.UID] = p
			}
			rl := relaunch{pod: "p",
				prev: karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: karpv1.NodeClaimStatus{NodeName: "n1", Conditions: tc.init}},
				cur:  karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "b", CreationTimestamp: metav1.NewTime(t0.Add(30 * time.Second))}}}
			if got := d.displaced(rl); got != tc.want {
				t.Errorf("displaced = %v, want %v", got, tc.want)
			}
		})
	}
}

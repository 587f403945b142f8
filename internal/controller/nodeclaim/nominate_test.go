package nodeclaim

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/testkube"
)

// TestNominationCleared: only an update that empties the nominatedNodeName
// of a pod that is still unbound wakes the claims that nominate it.
func TestNominationCleared(t *testing.T) {
	pod := func(nnn, node string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Status.NominatedNodeName, p.Spec.NodeName = nnn, node
		return p
	}
	for _, tc := range []struct {
		name     string
		old, new *corev1.Pod
		want     bool
	}{
		{"cleared by a failed try", pod("n1", ""), pod("", ""), true},
		{"cleared at binding", pod("n1", ""), pod("", "n1"), false},
		{"written", pod("", ""), pod("n1", ""), false},
		{"changed to another node", pod("n1", ""), pod("n2", ""), false},
		{"never set", pod("", ""), pod("", ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nominationCleared.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if nominationCleared.Create(event.CreateEvent{Object: pod("", "")}) {
		t.Error("a created pod passed")
	}
}

// TestNominees: every nominated pod with WriteNominatedNodeName, only the
// nominated ones also listed as displaced with NominateDisplaced (a UID
// listed as displaced but no longer nominated is not one), none with
// neither.
func TestNominees(t *testing.T) {
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		snapshot.NominatedPodsAnnotation: "a b c",
		snapshot.DisplacedPodsAnnotation: "b gone",
	}}}
	for _, tc := range []struct {
		name           string
		all, displaced bool
		want           []types.UID
	}{
		{"all", true, false, []types.UID{"a", "b", "c"}},
		{"all wins over displaced", true, true, []types.UID{"a", "b", "c"}},
		{"displaced only", false, true, []types.UID{"b"}},
		{"neither", false, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nominees(nc, tc.all, tc.displaced); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	bare := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{snapshot.NominatedPodsAnnotation: "a"}}}
	if got := nominees(bare, false, true); len(got) != 0 {
		t.Errorf("a claim without displaced pods: got %v, want none", got)
	}
}

// TestDisplacedPodsGetTheirNode runs the lifecycle controller with
// NominateDisplaced against a real API server: when a claim's node registers,
// the pod the claim lists as displaced gets the node's name in
// status.nominatedNodeName, written again after kube-scheduler would clear
// it; the claim's other nominated pod is left to the scheduler's choice.
func TestDisplacedPodsGetTheirNode(t *testing.T) {
	ctx := context.Background()
	createClass(t, "displaced", 0)
	np := createPool(t, "displaced", "displaced", "Never", 0)
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"displaced-planned", "displaced-moved"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}}
		if err := cluster.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), p) })
		pods[name] = p
	}
	nc := createClaim(t, np, "displaced-1")
	before := nc.DeepCopy()
	nc.Annotations = map[string]string{
		snapshot.NominatedPodsAnnotation: snapshot.EncodeNominations([]types.UID{pods["displaced-planned"].UID, pods["displaced-moved"].UID}),
		snapshot.DisplacedPodsAnnotation: string(pods["displaced-moved"].UID),
	}
	if err := cluster.Client.Patch(ctx, nc, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions()
	opts.NominateDisplaced = true
	runControllers(t, opts)

	nominatedTo := func(name string) (string, error) {
		p := &corev1.Pod{}
		err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, p)
		return p.Status.NominatedNodeName, err
	}
	waitNominated := func(what string) {
		testkube.Eventually(t, 30*time.Second, what, func() (bool, error) {
			got, err := nominatedTo("displaced-moved")
			return got == "displaced-1", fmt.Errorf("nominatedNodeName %q, err %v", got, err)
		})
	}
	waitNominated("the displaced pod nominated to its claim's node")

	// kube-scheduler clears it after a failed try.
	moved := &corev1.Pod{}
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(pods["displaced-moved"]), moved); err != nil {
		t.Fatal(err)
	}
	moved.Status.NominatedNodeName = ""
	if err := cluster.Client.Status().Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	waitNominated("the displaced pod nominated again after the scheduler cleared it")

	if got, err := nominatedTo("displaced-planned"); err != nil || got != "" {
		t.Errorf("the pod planned there first: nominatedNodeName %q (err %v), want none", got, err)
	}
}

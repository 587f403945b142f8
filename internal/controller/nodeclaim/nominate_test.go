package nodeclaim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
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

package termination

import (
	"context"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// TestLogHeld: the pods held for room are logged when they change, not on
// every look.
func TestLogHeld(t *testing.T) {
	var lines []string
	ctx := log.IntoContext(context.Background(), funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}))
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "web"}}
	holding := Plan{Waiting: []PodState{{web, WaitNoRoom}}}
	noRoom := map[types.UID]string{"web": "no ready node has room for it"}
	c := &Controller{}
	for i, step := range []struct {
		plan Plan
		logs int
	}{
		{holding, 1}, {holding, 1}, {Plan{}, 1}, {holding, 2},
	} {
		c.logHeld(ctx, "claim", step.plan, noRoom)
		if len(lines) != step.logs {
			t.Fatalf("after look %d: %d log lines, want %d: %v", i+1, len(lines), step.logs, lines)
		}
	}
	c.held.forget("claim")
	c.logHeld(ctx, "claim", holding, noRoom)
	if len(lines) != 3 {
		t.Errorf("a forgotten claim's held pods were not logged again: %v", lines)
	}
}

package termination

import (
	"context"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// heldLog remembers, per draining claim, which pods were last logged as
// held for room, so that the log says when that changes and not on every
// 5-second look: a pod evicted into nowhere is then traced to the checks
// before it.
type heldLog struct {
	mu   sync.Mutex
	last map[string]string
}

// logHeld logs the pods of claim's plan that wait for room, with why, when
// they differ from the last ones logged for it.
func (c *Controller) logHeld(ctx context.Context, claim string, plan Plan, noRoom map[types.UID]string) {
	var held []string
	for _, w := range plan.Waiting {
		if w.Reason == WaitNoRoom {
			held = append(held, w.Pod.Namespace+"/"+w.Pod.Name+": "+noRoom[w.Pod.UID])
		}
	}
	sort.Strings(held)
	sig := strings.Join(held, "; ")
	c.held.mu.Lock()
	if c.held.last == nil {
		c.held.last = map[string]string{}
	}
	changed := c.held.last[claim] != sig
	if sig == "" {
		delete(c.held.last, claim)
	} else {
		c.held.last[claim] = sig
	}
	c.held.mu.Unlock()
	if changed && sig != "" {
		log.FromContext(ctx).Info("pods held for room", "pods", held)
	}
}

func (h *heldLog) forget(claim string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.last, claim)
}

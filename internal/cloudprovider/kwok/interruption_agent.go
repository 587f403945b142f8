package kwok

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// Event reasons of interruption fault injection.
const (
	// InterruptionNoticeReason is the Normal event on a Node whose notice
	// was issued.
	InterruptionNoticeReason = "KWOKInterruptionNotice"
	// InterruptionInvalidReason is the Warning event on the object whose
	// InterruptAnnotation could not be read.
	InterruptionInvalidReason = "KWOKInterruptionInvalid"
)

// syncInterruption issues the notice a Node or its NodeClaim (nil when it
// has none) asks for, and terminates the instance, by deleting its Node,
// once the notice's time has come; gone reports that.
func (p *Provider) syncInterruption(ctx context.Context, node *corev1.Node, claim *karpv1.NodeClaim, now time.Time) (gone bool, err error) {
	logger := log.FromContext(ctx).WithValues("node", node.Name)
	rec, has, rerr := recordOf(node)
	if rerr != nil {
		return false, fmt.Errorf("Node %s: %w", node.Name, rerr)
	}
	if has {
		if !terminationDue(rec, now) {
			return false, nil
		}
		// The cloud takes the instance back whether or not it was replaced.
		if err := p.client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("Node %s: terminating the interrupted instance: %w", node.Name, err)
		}
		logger.Info("interrupted instance terminated: its notice ran out", "kind", rec.Kind, "noticeAt", rec.NoticeAt)
		return true, nil
	}
	var claimAnn map[string]string
	if claim != nil {
		claimAnn = claim.Annotations
	}
	rec, ok := notice(node.Annotations, claimAnn, now)
	if !ok {
		return false, nil
	}
	orig := node.DeepCopy()
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[InterruptionAnnotation] = encodeInterruption(rec)
	if err := p.client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		return false, fmt.Errorf("Node %s: recording its interruption notice: %w", node.Name, err)
	}
	if rec.Error != "" {
		var on client.Object = node
		if _, onNode := orig.Annotations[InterruptAnnotation]; !onNode && claim != nil {
			on = claim
		}
		p.event(on, corev1.EventTypeWarning, InterruptionInvalidReason, rec.Error+"; no interruption issued")
		logger.Info("interruption request refused", "error", rec.Error)
		return false, nil
	}
	msg := fmt.Sprintf("kwok fault injection: %s notice issued", rec.Kind)
	if rec.TerminateAt != nil {
		msg += fmt.Sprintf("; the instance terminates at %s", rec.TerminateAt.Format(time.RFC3339))
	}
	p.event(node, corev1.EventTypeNormal, InterruptionNoticeReason, msg)
	logger.Info("interruption notice issued", "kind", rec.Kind, "terminateAt", rec.TerminateAt)
	return false, nil
}

func (p *Provider) event(obj client.Object, eventType, reason, msg string) {
	if p.opts.Recorder != nil {
		p.opts.Recorder.Event(obj, eventType, reason, msg)
	}
}

// Interruptions returns the source of the notices the agent issues, for the
// interruption controller. It reads them from the Nodes, so a restarted
// controller delivers those not yet handled.
func (p *Provider) Interruptions() cloudprovider.InterruptionSource {
	return &interruptionSource{p: p, acked: map[string]bool{}}
}

// MarkUnavailable records that an offering is short of capacity, as a spot
// interruption shows, for InsufficientCapacityTTL.
func (p *Provider) MarkUnavailable(o cloudprovider.Offering) { p.ice.Add(o) }

type interruptionSource struct {
	p *Provider
	// acked holds the messages acknowledged by this process, so that one is
	// not delivered again while the cache has not yet seen the Node's
	// delivered annotation. Losing it merely delivers a message twice.
	mu    sync.Mutex
	acked map[string]bool
}

func (s *interruptionSource) String() string { return "kwok fault injection" }

// Receive returns the notices not yet handled, waiting one agent interval
// when there is none.
func (s *interruptionSource) Receive(ctx context.Context) ([]cloudprovider.InterruptionMessage, error) {
	// Every agent interval, and read only: not copied out of the cache.
	nodes := &corev1.NodeList{}
	if err := s.p.client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("kwok interruptions: listing Nodes: %w", err)
	}
	var out []cloudprovider.InterruptionMessage
	s.mu.Lock()
	for i := range nodes.Items {
		n := &nodes.Items[i]
		m, ok := undelivered(n)
		if !ok || s.acked[m.ID] {
			continue
		}
		name, id := n.Name, m.ID
		m.Ack = func(ctx context.Context) error { return s.ack(ctx, name, id) }
		out = append(out, m)
	}
	s.mu.Unlock()
	if len(out) == 0 {
		// Real time, not the provider's clock: this paces the polling, as
		// SQS's long poll does; it simulates nothing.
		t := time.NewTimer(s.p.opts.AgentInterval)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	return out, nil
}

// ack records on the Node that its notice was handled; a Node already gone
// needs nothing.
func (s *interruptionSource) ack(ctx context.Context, name, id string) error {
	node := &corev1.Node{}
	if err := s.p.client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("kwok interruptions: acknowledging %s: %w", id, err)
	}
	if _, done := node.Annotations[InterruptionDeliveredAnnotation]; !done {
		orig := node.DeepCopy()
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[InterruptionDeliveredAnnotation] = s.p.clock.Now().UTC().Format(time.RFC3339)
		if err := s.p.client.Patch(ctx, node, client.MergeFrom(orig)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("kwok interruptions: acknowledging %s on Node %s: %w", id, name, err)
		}
	}
	s.mu.Lock()
	s.acked[id] = true
	s.mu.Unlock()
	return nil
}

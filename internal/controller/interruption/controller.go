package interruption

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/metrics"
)

// Controller receives events from its source and acts on each.
type Controller struct {
	Client   client.Client
	Source   cloudprovider.InterruptionSource
	Recorder record.EventRecorder
	// Unavailable marks a spot offering short of capacity.
	Unavailable func(cloudprovider.Offering)
}

// NeedLeaderElection is true: one replica acts on the events.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start receives until ctx ends. Errors of the source are logged and
// retried after a pause; they never stop the controller.
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("interruption")
	ctx = log.IntoContext(ctx, logger)
	logger.Info("handling interruption events", "source", c.Source.String())
	for ctx.Err() == nil {
		if err := c.Once(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "receiving interruption events; retrying", "source", c.Source.String())
			sleep(ctx, 5*time.Second)
		}
	}
	return nil
}

// Once receives from the source once and handles what came. A message is
// acknowledged once handled, and so is one that cannot be parsed; one whose
// handling failed is left to come again.
func (c *Controller) Once(ctx context.Context) error {
	msgs, err := c.Source.Receive(ctx)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := c.handle(ctx, m); err != nil {
			log.FromContext(ctx).Error(err, "handling interruption message; it will be received again", "message", m.ID)
			continue
		}
		if m.Ack == nil {
			continue
		}
		if err := m.Ack(ctx); err != nil {
			return err
		}
		metrics.InterruptionDeleted.Inc()
	}
	return nil
}

// handle acts on one message. Only failures to reach the API server are
// errors; a message that cannot be parsed is counted and dropped.
func (c *Controller) handle(ctx context.Context, m cloudprovider.InterruptionMessage) error {
	if m.Err != nil {
		metrics.InterruptionMessages.WithLabelValues("Unparseable").Inc()
		log.FromContext(ctx).Info("dropping an interruption message that cannot be parsed", "message", m.ID, "error", m.Err.Error())
		return nil
	}
	ev := m.Event
	metrics.InterruptionMessages.WithLabelValues(string(ev.Kind)).Inc()
	if len(ev.InstanceIDs) == 0 {
		return nil
	}
	claims := &karpv1.NodeClaimList{}
	if err := c.Client.List(ctx, claims); err != nil {
		return fmt.Errorf("listing NodeClaims: %w", err)
	}
	want := map[string]bool{}
	for _, id := range ev.InstanceIDs {
		want[id] = true
	}
	for i := range claims.Items {
		nc := &claims.Items[i]
		if nc.Status.ProviderID == "" || !want[instanceID(nc.Status.ProviderID)] {
			continue
		}
		if err := c.act(ctx, ev, nc, decide(ev, nc)); err != nil {
			return err
		}
	}
	return nil
}

// act carries out d for nc.
func (c *Controller) act(ctx context.Context, ev cloudprovider.Interruption, nc *karpv1.NodeClaim, d decision) error {
	if d.Unavailable != nil && c.Unavailable != nil {
		c.Unavailable(*d.Unavailable)
	}
	if d.Reason != "" {
		c.Recorder.Event(nc, d.EventType, d.Reason, d.Message)
	}
	if d.Delete {
		if err := c.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting interrupted NodeClaim %s: %w", nc.Name, err)
		}
		log.FromContext(ctx).Info("interrupted; NodeClaim deleted for replacement", "nodeclaim", nc.Name, "event", ev.Kind, "eventID", ev.ID)
	}
	if d.Action != "" {
		metrics.InterruptionActions.WithLabelValues(d.Action, string(ev.Kind)).Inc()
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

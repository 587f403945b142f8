package interruption

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	awsprovider "github.com/nodewright/nodewright/internal/cloudprovider/aws"
	"github.com/nodewright/nodewright/internal/metrics"
)

// Controller long-polls the queue and acts on each event.
type Controller struct {
	Client   client.Client
	SQS      awsprovider.SQS
	Queue    string // a name or a URL
	Recorder record.EventRecorder
	// Unavailable marks a spot offering short of capacity.
	Unavailable func(cloudprovider.Offering)
	// WaitSeconds is the long poll's wait; zero is 20, SQS's longest.
	WaitSeconds int32
}

// NeedLeaderElection is true: one replica acts on the queue.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start polls until ctx ends. Errors reaching SQS are logged and retried
// after a pause; they never stop the controller.
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("interruption")
	url := ""
	for url == "" {
		u, err := c.queueURL(ctx)
		if err != nil {
			logger.Error(err, "finding the interruption queue; retrying")
			if !sleep(ctx, 10*time.Second) {
				return nil
			}
			continue
		}
		url = u
	}
	logger.Info("watching the interruption queue", "queue", url)
	for ctx.Err() == nil {
		if err := c.Poll(ctx, url); err != nil && ctx.Err() == nil {
			logger.Error(err, "polling the interruption queue")
			sleep(ctx, 5*time.Second)
		}
	}
	return nil
}

func (c *Controller) queueURL(ctx context.Context) (string, error) {
	if strings.HasPrefix(c.Queue, "https://") || strings.HasPrefix(c.Queue, "http://") {
		return c.Queue, nil
	}
	out, err := c.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(c.Queue)})
	if err != nil {
		return "", fmt.Errorf("--interruption-queue %s: %w", c.Queue, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// Poll receives up to ten messages once and handles them. Every message
// is deleted once handled, and so is one that cannot be parsed: a bad
// message must not come back for ever.
func (c *Controller) Poll(ctx context.Context, url string) error {
	wait := c.WaitSeconds
	if wait <= 0 {
		wait = 20
	}
	out, err := c.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
		WaitTimeSeconds: wait, VisibilityTimeout: 30})
	if err != nil {
		return fmt.Errorf("receiving from %s: %w", url, err)
	}
	for _, m := range out.Messages {
		if err := c.handle(ctx, m); err != nil {
			// Leave it on the queue: it comes back after the visibility
			// timeout, by when the API server may answer.
			log.FromContext(ctx).Error(err, "handling interruption message; it will be received again", "message", aws.ToString(m.MessageId))
			continue
		}
		if _, err := c.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
			return fmt.Errorf("deleting message %s: %w", aws.ToString(m.MessageId), err)
		}
		metrics.InterruptionDeleted.Inc()
	}
	return nil
}

// handle acts on one message. Only failures to reach the API server are
// errors; a message that cannot be parsed is counted and dropped.
func (c *Controller) handle(ctx context.Context, m sqstypes.Message) error {
	logger := log.FromContext(ctx)
	ev, err := awsprovider.ParseInterruption(aws.ToString(m.Body))
	if err != nil {
		metrics.InterruptionMessages.WithLabelValues("Unparseable").Inc()
		logger.Info("dropping an interruption message that cannot be parsed", "message", aws.ToString(m.MessageId), "error", err.Error())
		return nil
	}
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
		id := nc.Status.ProviderID[strings.LastIndex(nc.Status.ProviderID, "/")+1:]
		if nc.Status.ProviderID == "" || !want[id] {
			continue
		}
		if err := c.act(ctx, ev, nc); err != nil {
			return err
		}
	}
	return nil
}

// act replaces an interrupted NodeClaim: it is deleted, which cordons its
// node, plans its pods onto new capacity at once and drains the node as
// that capacity comes up (the same path as drift's replacement).
func (c *Controller) act(ctx context.Context, ev awsprovider.Interruption, nc *karpv1.NodeClaim) error {
	logger := log.FromContext(ctx).WithValues("nodeclaim", nc.Name, "event", ev.Kind, "eventID", ev.ID)
	if !ev.Replaces() {
		metrics.InterruptionActions.WithLabelValues("NoAction", string(ev.Kind)).Inc()
		if ev.Kind == awsprovider.RebalanceRecommendation {
			c.Recorder.Event(nc, corev1.EventTypeNormal, "RebalanceRecommendation", "EC2 recommends moving off this spot instance; nothing done")
		}
		return nil
	}
	if ev.Kind == awsprovider.SpotInterruption && c.Unavailable != nil && nc.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot {
		c.Unavailable(cloudprovider.Offering{InstanceType: nc.Labels[corev1.LabelInstanceTypeStable],
			Zone: nc.Labels[corev1.LabelTopologyZone], CapacityType: karpv1.CapacityTypeSpot})
	}
	if nc.DeletionTimestamp != nil {
		return nil
	}
	msg := fmt.Sprintf("%s (event %s): replacing the NodeClaim before its instance goes", ev.Kind, ev.ID)
	if ev.Kind == awsprovider.StateChange {
		msg = fmt.Sprintf("instance is %s (event %s): replacing the NodeClaim", ev.State, ev.ID)
	}
	c.Recorder.Event(nc, corev1.EventTypeWarning, string(ev.Kind), msg)
	if err := c.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting interrupted NodeClaim %s: %w", nc.Name, err)
	}
	metrics.InterruptionActions.WithLabelValues("CordonAndDrain", string(ev.Kind)).Inc()
	logger.Info("interrupted; NodeClaim deleted for replacement")
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

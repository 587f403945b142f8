package aws

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// QueueSource is the interruption queue as a cloudprovider.InterruptionSource:
// it long-polls SQS for the EventBridge events Karpenter's rules send and
// deletes each message once the controller acknowledges it.
type QueueSource struct {
	SQS   SQS
	Queue string // a name or a URL
	// WaitSeconds is the long poll's wait; zero is 20, SQS's longest.
	WaitSeconds int32

	mu  sync.Mutex
	url string // resolved once
}

var _ cloudprovider.InterruptionSource = (*QueueSource)(nil)

func (q *QueueSource) String() string { return "SQS queue " + q.Queue }

// Receive receives up to ten messages once, parsing each. The queue's URL is
// looked up on the first call that succeeds; until then each call fails.
func (q *QueueSource) Receive(ctx context.Context) ([]cloudprovider.InterruptionMessage, error) {
	url, err := q.queueURL(ctx)
	if err != nil {
		return nil, err
	}
	wait := q.WaitSeconds
	if wait <= 0 {
		wait = 20
	}
	out, err := q.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
		WaitTimeSeconds: wait, VisibilityTimeout: 30})
	if err != nil {
		return nil, fmt.Errorf("receiving from %s: %w", url, err)
	}
	msgs := make([]cloudprovider.InterruptionMessage, 0, len(out.Messages))
	for _, m := range out.Messages {
		id, receipt := aws.ToString(m.MessageId), m.ReceiptHandle
		ev, err := ParseInterruption(aws.ToString(m.Body))
		msgs = append(msgs, cloudprovider.InterruptionMessage{ID: id, Event: ev, Err: err,
			// Every message is deleted once handled, and so is one that
			// cannot be parsed: a bad message must not come back for ever.
			Ack: func(ctx context.Context) error {
				if _, err := q.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: receipt}); err != nil {
					return fmt.Errorf("deleting message %s from %s: %w", id, url, err)
				}
				return nil
			}})
	}
	return msgs, nil
}

func (q *QueueSource) queueURL(ctx context.Context) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.url != "" {
		return q.url, nil
	}
	if strings.HasPrefix(q.Queue, "https://") || strings.HasPrefix(q.Queue, "http://") {
		q.url = q.Queue
	} else {
		out, err := q.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.Queue)})
		if err != nil {
			return "", fmt.Errorf("--interruption-queue %s: %w", q.Queue, err)
		}
		q.url = aws.ToString(out.QueueUrl)
	}
	log.FromContext(ctx).Info("watching the interruption queue", "queue", q.url)
	return q.url, nil
}

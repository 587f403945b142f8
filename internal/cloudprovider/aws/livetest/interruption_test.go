package livetest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	awsprovider "github.com/nodewright/nodewright/internal/cloudprovider/aws"
	"github.com/nodewright/nodewright/internal/controller/interruption"
)

// TestInterruptionQueue puts EventBridge events on an SQS queue in moto: a
// spot interruption deletes its NodeClaim (so it is replaced) and marks the
// offering unavailable, a rebalance recommendation only records an event,
// and a message that cannot be parsed is deleted, not received again.
func TestInterruptionQueue(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := deadline()
	defer cancel()
	q := sqs.NewFromConfig(e.front.Config())
	created, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("live-interruption")})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(created.QueueUrl)

	spot := interrupted(t, "spot-1", "i-0000000000000aaaa", karpv1.CapacityTypeSpot)
	rebalanced := interrupted(t, "spot-2", "i-0000000000000bbbb", karpv1.CapacityTypeSpot)
	for _, body := range []string{
		eventBody("aws.ec2", "EC2 Spot Instance Interruption Warning", `{"instance-id":"i-0000000000000aaaa","instance-action":"terminate"}`),
		eventBody("aws.ec2", "EC2 Instance Rebalance Recommendation", `{"instance-id":"i-0000000000000bbbb"}`),
		"this is not an event",
	} {
		if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	var marked []cloudprovider.Offering
	rec := record.NewFakeRecorder(10)
	c := &interruption.Controller{Client: cluster.Client, Recorder: rec,
		Source:      &awsprovider.QueueSource{SQS: q, Queue: "live-interruption", WaitSeconds: 1},
		Unavailable: func(o cloudprovider.Offering) { marked = append(marked, o) }}
	for i := 0; i < 3; i++ {
		if err := c.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := &karpv1.NodeClaim{}
	err = cluster.Client.Get(ctx, client.ObjectKeyFromObject(spot), got)
	if err == nil && got.DeletionTimestamp == nil {
		t.Errorf("NodeClaim %s of the interrupted spot instance is not being deleted", spot.Name)
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(rebalanced), got); err != nil || got.DeletionTimestamp != nil {
		t.Errorf("rebalance recommendation touched NodeClaim %s: %v %v", rebalanced.Name, err, got.DeletionTimestamp)
	}
	want := cloudprovider.Offering{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot"}
	if len(marked) != 1 || marked[0] != want {
		t.Errorf("offerings marked unavailable = %v, want [%v]", marked, want)
	}
	left, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range left.Attributes {
		if v != "0" {
			t.Errorf("queue still holds messages: %s = %s", k, v)
		}
	}
}

func interrupted(t *testing.T, name, instance, capacityType string) *karpv1.NodeClaim {
	t.Helper()
	nc := claim(t, name, "any", "1")
	nc.Labels[karpv1.CapacityTypeLabelKey] = capacityType
	nc.Labels[corev1.LabelInstanceTypeStable] = "m5.large"
	nc.Labels[corev1.LabelTopologyZone] = "us-east-1a"
	if err := cluster.Client.Update(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID = "aws:///us-east-1a/" + instance
	if err := cluster.Client.Status().Update(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

func eventBody(source, detailType, detail string) string {
	return `{"version":"0","id":"e-live","detail-type":"` + detailType + `","source":"` + source +
		`","account":"123456789012","time":"2026-11-25T12:00:00Z","region":"us-east-1","resources":[],"detail":` + detail + `}`
}

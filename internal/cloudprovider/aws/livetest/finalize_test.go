package livetest

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// TestDeletedClassCleansUp: a deleted EC2NodeClass waits while a NodeClaim
// uses it, then the instance profile made for its role and its launch
// templates are deleted and the class goes.
func TestDeletedClassCleansUp(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := deadline()
	defer cancel()
	e.class(t, "gone", nil)
	class := e.reconcile(t, "gone")
	profile := class.Status.InstanceProfile
	nc := claim(t, "gone-1", "gone", "1", req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))
	if _, err := e.provider.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if n := e.templates(t); n == 0 {
		t.Fatal("no launch template after a launch")
	}
	if err := cluster.Client.Delete(ctx, class); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, "gone")
	iamapi := iam.NewFromConfig(e.front.Config())
	if _, err := iamapi.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(profile)}); err != nil {
		t.Fatalf("instance profile %s deleted while NodeClaim gone-1 still uses the class: %v", profile, err)
	}
	if err := cluster.Client.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "gone"}}); err != nil {
		t.Fatal(err)
	}
	_, err := iamapi.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(profile)})
	var nf *iamtypes.NoSuchEntityException
	if !errors.As(err, &nf) {
		t.Errorf("instance profile %s still exists after the class went: %v", profile, err)
	}
	if n := e.templates(t); n != 0 {
		t.Errorf("%d launch templates left after the class went", n)
	}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: "gone"}, &awsv1.EC2NodeClass{}); !apierrors.IsNotFound(err) {
		t.Errorf("EC2NodeClass gone still exists (err %v); its finalizer %s should be released", err, "karpenter.k8s.aws/termination")
	}
}

// templates counts the launch templates made for the cluster.
func (e *env) templates(t *testing.T) int {
	t.Helper()
	out, err := e.ec2.DescribeLaunchTemplates(context.Background(), &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.LaunchTemplates)
}

package aws

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// The EC2NodeClass conditions, as Karpenter names them.
const (
	ConditionSubnetsReady         = "SubnetsReady"
	ConditionSecurityGroupsReady  = "SecurityGroupsReady"
	ConditionAMIsReady            = "AMIsReady"
	ConditionInstanceProfileReady = "InstanceProfileReady"
	ConditionValidationSucceeded  = "ValidationSucceeded"
	ConditionReady                = "Ready"
	// ConditionPricesLive is nodewright's own: True when on-demand prices
	// come from the Pricing API, False with the reason when they are the
	// built-in ones. It does not affect Ready.
	ConditionPricesLive = "PricesLive"
)

// partConditions are the conditions Ready sums up, in the order reported.
var partConditions = []string{ConditionSubnetsReady, ConditionSecurityGroupsReady, ConditionAMIsReady,
	ConditionInstanceProfileReady, ConditionValidationSucceeded}

// Resolver works out an EC2NodeClass's status from AWS.
type Resolver struct {
	EC2 EC2API
	SSM SSM
	IAM IAM
	// ClusterName names instance profiles and tags what is ours.
	ClusterName string
	Region      string
	// KubernetesVersion is the cluster's minor version ("1.34"), which
	// chooses the images an alias names.
	KubernetesVersion string
	Now               func() time.Time
	// PriceStatus, when set, says where prices come from; it shows as the
	// PricesLive condition, which does not affect Ready.
	PriceStatus func() (live bool, note string)
}

// Resolve returns the class's status: what its selectors resolve to, the
// instance profile it launches with, and a condition per part. It does not
// fail: what cannot be resolved is a False condition with AWS's message.
// Parts that fail keep the previous status's values, so that a throttled
// call does not empty a working class.
func (r *Resolver) Resolve(ctx context.Context, class *awsv1.EC2NodeClass) awsv1.EC2NodeClassStatus {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	prev := class.Status
	st := awsv1.EC2NodeClassStatus{Conditions: slices.Clone(prev.Conditions)}
	gen := class.Generation
	set := func(t string, err error, okMsg string) {
		c := metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, Message: okMsg, ObservedGeneration: gen}
		if err != nil {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, strings.TrimSuffix(t, "Ready")+"NotFound", err.Error()
			if t == ConditionValidationSucceeded {
				c.Reason = "ValidationFailed"
			}
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}

	subnets, err := Subnets(ctx, r.EC2, class.Spec.SubnetSelectorTerms)
	if err == nil && len(subnets) == 0 {
		err = errors.New("spec.subnetSelectorTerms select no subnet; check the tags or IDs")
	}
	if err != nil {
		subnets = prev.Subnets
	}
	st.Subnets = subnets
	set(ConditionSubnetsReady, err, "")

	groups, err := SecurityGroups(ctx, r.EC2, class.Spec.SecurityGroupSelectorTerms)
	if err == nil && len(groups) == 0 {
		err = errors.New("spec.securityGroupSelectorTerms select no security group; check the tags, IDs or names")
	}
	if err != nil {
		groups = prev.SecurityGroups
	}
	st.SecurityGroups = groups
	set(ConditionSecurityGroupsReady, err, "")

	amis, err := AMIs(ctx, r.EC2, r.SSM, class, r.KubernetesVersion, now)
	if err == nil && len(amis) == 0 {
		err = errors.New("spec.amiSelectorTerms select no available image; check the terms and the images' owner")
	}
	if err != nil {
		amis = prev.AMIs
	}
	st.AMIs = amis
	set(ConditionAMIsReady, err, "")

	profile, err := r.instanceProfile(ctx, class)
	if err != nil {
		profile = prev.InstanceProfile
	}
	st.InstanceProfile = profile
	set(ConditionInstanceProfileReady, err, "")

	set(ConditionValidationSucceeded, r.validate(ctx, class, &st), "")

	if r.PriceStatus != nil {
		live, note := r.PriceStatus()
		c := metav1.Condition{Type: ConditionPricesLive, Status: metav1.ConditionTrue, Reason: "PricingAPI", Message: note, ObservedGeneration: gen}
		if !live {
			c.Status, c.Reason = metav1.ConditionFalse, "BuiltinPrices"
		}
		if note != "" {
			meta.SetStatusCondition(&st.Conditions, c)
		}
	}

	var notReady []string
	for _, t := range partConditions {
		if !meta.IsStatusConditionTrue(st.Conditions, t) {
			notReady = append(notReady, t+"=False")
		}
	}
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ConditionReady, ObservedGeneration: gen}
	if len(notReady) > 0 {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "NotReady", strings.Join(notReady, ", ")
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	return st
}

// validate asks EC2, with a dry run, whether the controller may launch an
// instance of the class with its tags: a missing ec2:RunInstances or
// ec2:CreateTags permission shows here instead of at the first launch.
func (r *Resolver) validate(ctx context.Context, class *awsv1.EC2NodeClass, st *awsv1.EC2NodeClassStatus) error {
	if len(st.Subnets) == 0 || len(st.SecurityGroups) == 0 || len(st.AMIs) == 0 {
		return errors.New("not validated: subnets, security groups and AMIs must resolve first")
	}
	tags := ec2Tags(InstanceTags(r.ClusterName, class, "validation", "validation"))
	in := &ec2.RunInstancesInput{
		DryRun:           aws.Bool(true),
		MinCount:         aws.Int32(1),
		MaxCount:         aws.Int32(1),
		ImageId:          aws.String(st.AMIs[0].ID),
		InstanceType:     ec2types.InstanceTypeM5Large,
		SubnetId:         aws.String(st.Subnets[0].ID),
		SecurityGroupIds: []string{st.SecurityGroups[0].ID},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
		},
	}
	_, err := r.EC2.RunInstances(ctx, in)
	var apiErr smithy.APIError
	switch {
	case err == nil:
		return nil // an EC2 that does not honour DryRun; nothing learned
	case errors.As(err, &apiErr) && apiErr.ErrorCode() == "DryRunOperation":
		return nil
	case errors.As(err, &apiErr) && apiErr.ErrorCode() == "UnauthorizedOperation":
		return fmt.Errorf("the controller may not launch instances of this class with its tags (dry-run RunInstances): %s; see the IAM policy in docs/aws.md", apiErr.ErrorMessage())
	}
	return fmt.Errorf("dry-run RunInstances: %w", err)
}

// InstanceProfileName is the name of the instance profile made for a
// class's spec.role: one per cluster, region and class.
func InstanceProfileName(cluster, region, class string) string {
	h := fnv.New64a()
	h.Write([]byte(region + "/" + class))
	return fmt.Sprintf("%s_%d", cluster, h.Sum64())
}

package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// instanceProfile returns the instance profile the class launches with:
// spec.instanceProfile as given, once IAM confirms it exists, or the one
// made for spec.role, created here and kept holding that role.
func (r *Resolver) instanceProfile(ctx context.Context, class *awsv1.EC2NodeClass) (string, error) {
	if p := class.Spec.InstanceProfile; p != nil {
		if _, err := r.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: p}); err != nil {
			return "", fmt.Errorf("spec.instanceProfile %s: %w", *p, err)
		}
		return *p, nil
	}
	if class.Spec.Role == "" {
		return "", errors.New("neither spec.role nor spec.instanceProfile is set")
	}
	name := InstanceProfileName(r.ClusterName, r.Region, class.Name)
	role := roleName(class.Spec.Role)
	got, err := r.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	var nf *iamtypes.NoSuchEntityException
	switch {
	case errors.As(err, &nf):
		_, err := r.IAM.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
			InstanceProfileName: aws.String(name),
			Path:                aws.String(fmt.Sprintf("/nodewright/%s/%s/%s/", r.Region, r.ClusterName, class.UID)),
			Tags: []iamtypes.Tag{
				{Key: aws.String(TagNodeClass), Value: aws.String(class.Name)},
				{Key: aws.String(clusterTag(r.ClusterName)), Value: aws.String("owned")},
				{Key: aws.String("topology.kubernetes.io/region"), Value: aws.String(r.Region)},
			},
		})
		var exists *iamtypes.EntityAlreadyExistsException
		if err != nil && !errors.As(err, &exists) {
			return "", fmt.Errorf("creating instance profile %s for spec.role %s: %w", name, class.Spec.Role, err)
		}
	case err != nil:
		return "", fmt.Errorf("getting instance profile %s for spec.role %s: %w", name, class.Spec.Role, err)
	default:
		for _, have := range got.InstanceProfile.Roles {
			if aws.ToString(have.RoleName) == role {
				return name, nil
			}
			// spec.role changed: a profile holds one role.
			if _, err := r.IAM.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
				InstanceProfileName: aws.String(name), RoleName: have.RoleName}); err != nil {
				return "", fmt.Errorf("removing role %s from instance profile %s: %w", aws.ToString(have.RoleName), name, err)
			}
		}
	}
	if _, err := r.IAM.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{
		InstanceProfileName: aws.String(name), RoleName: aws.String(role)}); err != nil {
		return "", fmt.Errorf("adding spec.role %s to instance profile %s: %w", class.Spec.Role, name, err)
	}
	return name, nil
}

// DeleteInstanceProfile removes the instance profile made for the class's
// spec.role, once the class is deleted. A profile the user named is left.
func (r *Resolver) DeleteInstanceProfile(ctx context.Context, class *awsv1.EC2NodeClass) error {
	if class.Spec.InstanceProfile != nil || class.Spec.Role == "" {
		return nil
	}
	name := InstanceProfileName(r.ClusterName, r.Region, class.Name)
	got, err := r.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	var nf *iamtypes.NoSuchEntityException
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting instance profile %s: %w", name, err)
	}
	for _, role := range got.InstanceProfile.Roles {
		if _, err := r.IAM.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: role.RoleName}); err != nil && !errors.As(err, &nf) {
			return fmt.Errorf("removing role %s from instance profile %s: %w", aws.ToString(role.RoleName), name, err)
		}
	}
	if _, err := r.IAM.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("deleting instance profile %s: %w", name, err)
	}
	return nil
}

// roleName is a role's name from its name or ARN
// (arn:aws:iam::123456789012:role/path/Name).
func roleName(role string) string {
	if i := strings.LastIndex(role, "/"); i >= 0 && strings.HasPrefix(role, "arn:") {
		return role[i+1:]
	}
	return role
}

// DeleteLaunchTemplates removes the launch templates made for the class in
// this cluster, once the class is deleted: found by the tags they were made
// with, so that no other template is touched.
func (r *Resolver) DeleteLaunchTemplates(ctx context.Context, class *awsv1.EC2NodeClass) error {
	out, err := r.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + TagManagedBy), Values: []string{r.ClusterName}},
		{Name: aws.String("tag:" + TagNodeClass), Values: []string{class.Name}},
	}})
	if err != nil {
		return fmt.Errorf("finding launch templates of EC2NodeClass %s: %w", class.Name, err)
	}
	for _, lt := range out.LaunchTemplates {
		if _, err := r.EC2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: lt.LaunchTemplateId}); err != nil &&
			!isCode(err, "InvalidLaunchTemplateId.NotFound") {
			return fmt.Errorf("deleting launch template %s: %w", aws.ToString(lt.LaunchTemplateName), err)
		}
	}
	return nil
}

package testaws

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
)

// DiscoveryTag tags what an Account's EC2NodeClass selects.
const DiscoveryTag = "karpenter.sh/discovery"

// KubernetesVersion is the version whose EKS image parameters an Account
// publishes.
const KubernetesVersion = "1.34"

// Account is what a cluster's EC2NodeClass needs in moto: a VPC with subnets
// in us-east-1a and us-east-1b tagged DiscoveryTag=<cluster> and one in
// us-east-1c without the tag, a tagged security group and an untagged one,
// a node role, and the AL2023 image parameters of KubernetesVersion pointing
// at moto's Amazon Linux images.
type Account struct {
	Cluster string
	Role    string
	// Subnets are the tagged subnets by zone; Untagged is the other one.
	Subnets  map[string]string
	Untagged string
	Group    string
	// Images are moto's Amazon Linux 2 images by architecture (x86_64,
	// arm64); the parameters name the first of each.
	Images map[string][]string
}

// AL2023Parameter is the public parameter of the AL2023 standard image.
func AL2023Parameter(arch string) string {
	return "/aws/service/eks/optimized-ami/" + KubernetesVersion + "/amazon-linux-2023/" + arch + "/standard/recommended/image_id"
}

// NewAccount sets up an Account for cluster through f.
func NewAccount(t testing.TB, f *Front, cluster string) *Account {
	t.Helper()
	a, err := newAccount(context.Background(), f, cluster)
	if err != nil {
		t.Fatalf("setting up the moto account: %v", err)
	}
	return a
}

func newAccount(ctx context.Context, f *Front, cluster string) (*Account, error) {
	cfg := f.Config()
	api := ec2.NewFromConfig(cfg)
	a := &Account{Cluster: cluster, Role: "KarpenterNodeRole-" + cluster, Subnets: map[string]string{}, Images: map[string][]string{}}
	vpc, err := api.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		return nil, err
	}
	tag := []ec2types.Tag{{Key: aws.String(DiscoveryTag), Value: aws.String(cluster)}}
	for i, zone := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		in := &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String(fmt.Sprintf("10.0.%d.0/20", 16*i)), AvailabilityZone: aws.String(zone)}
		if zone != "us-east-1c" {
			in.TagSpecifications = []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSubnet, Tags: tag}}
		}
		s, err := api.CreateSubnet(ctx, in)
		if err != nil {
			return nil, err
		}
		if zone == "us-east-1c" {
			a.Untagged = aws.ToString(s.Subnet.SubnetId)
		} else {
			a.Subnets[zone] = aws.ToString(s.Subnet.SubnetId)
		}
	}
	sg, err := api.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("nodes"), Description: aws.String("nodes"), VpcId: vpc.Vpc.VpcId,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSecurityGroup, Tags: tag}}})
	if err != nil {
		return nil, err
	}
	a.Group = aws.ToString(sg.GroupId)
	if _, err := api.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("other"), Description: aws.String("other"), VpcId: vpc.Vpc.VpcId}); err != nil {
		return nil, err
	}
	imgs, err := api.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
		Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{"amzn2-ami-hvm-*"}}}})
	if err != nil {
		return nil, err
	}
	for _, img := range imgs.Images {
		arch := "x86_64"
		if img.Architecture == ec2types.ArchitectureValuesArm64 {
			arch = "arm64"
		}
		a.Images[arch] = append(a.Images[arch], aws.ToString(img.ImageId))
	}
	if len(a.Images["x86_64"]) < 2 || len(a.Images["arm64"]) < 1 {
		return nil, fmt.Errorf("moto's Amazon images lack two x86_64 and one arm64 image: %v", a.Images)
	}
	f.SetParameter(AL2023Parameter("x86_64"), a.Images["x86_64"][0])
	f.SetParameter(AL2023Parameter("arm64"), a.Images["arm64"][0])
	if _, err := iam.NewFromConfig(cfg).CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String(a.Role), AssumeRolePolicyDocument: aws.String("{}")}); err != nil {
		return nil, err
	}
	return a, nil
}

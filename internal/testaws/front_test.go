package testaws_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/nodewright/nodewright/internal/testaws"
)

const eksAMIParameter = "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id"

func TestFrontAnswersReservedParametersAndProxiesTheRest(t *testing.T) {
	ctx := context.Background()
	f := testaws.NewFront(t, testaws.Start(t))
	f.SetParameter(eksAMIParameter, "ami-0123456789abcdef0")
	client := ssm.NewFromConfig(f.Config())

	got, err := client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(eksAMIParameter)})
	if err != nil {
		t.Fatal(err)
	}
	if v := aws.ToString(got.Parameter.Value); v != "ami-0123456789abcdef0" {
		t.Errorf("front parameter = %q, want ami-0123456789abcdef0", v)
	}
	if got.Parameter.LastModifiedDate == nil || got.Parameter.Type != ssmtypes.ParameterTypeString {
		t.Errorf("front parameter = %+v, want a String with a LastModifiedDate", got.Parameter)
	}

	const motoParameter = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-6.1-x86_64"
	got, err = client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(motoParameter)})
	if err != nil {
		t.Fatal(err)
	}
	if v := aws.ToString(got.Parameter.Value); !strings.HasPrefix(v, "ami-") {
		t.Errorf("moto parameter = %q, want an AMI ID", v)
	}

	var notFound *ssmtypes.ParameterNotFound
	if _, err := client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/nodewright/missing")}); !errors.As(err, &notFound) {
		t.Errorf("missing parameter: err = %v, want ParameterNotFound from moto", err)
	}

	both, err := client.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{eksAMIParameter, motoParameter}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range both.Parameters {
		names = append(names, aws.ToString(p.Name))
	}
	slices.Sort(names)
	if want := []string{motoParameter, eksAMIParameter}; !slices.Equal(names, want) {
		t.Errorf("GetParameters names = %v, want %v", names, want)
	}

	calls := f.Calls()
	if calls["ssm:GetParameter"] != 3 || calls["ssm:GetParameters"] != 1 {
		t.Errorf("calls = %v, want 3 ssm:GetParameter and 1 ssm:GetParameters", calls)
	}
}

func TestFrontPricesGetProducts(t *testing.T) {
	ctx := context.Background()
	f := testaws.NewFront(t, testaws.Start(t))
	f.SetPrice("us-east-1", "m5.large", 0.096)
	f.SetPrice("us-east-1", "c5.large", 0.085)
	f.SetPrice("us-west-2", "m5.large", 0.1)
	for _, typ := range []string{"m5.xlarge", "m5.2xlarge", "c5.xlarge"} {
		f.SetPrice("us-east-1", typ, 0.2)
	}
	client := pricing.NewFromConfig(f.Config())
	filter := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}

	out, err := client.GetProducts(ctx, &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{
			filter("regionCode", "us-east-1"),
			filter("instanceType", "m5.large"),
			filter("operatingSystem", "Linux"),
			filter("tenancy", "Shared"),
			filter("capacitystatus", "Used"),
			filter("preInstalledSw", "NA"),
			filter("operation", "RunInstances"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.PriceList) != 1 {
		t.Fatalf("price list = %v, want one product", out.PriceList)
	}
	typ, usd := readPriceDocument(t, out.PriceList[0])
	if typ != "m5.large" || usd != "0.0960000000" {
		t.Errorf("product = %s at %s USD/h, want m5.large at 0.0960000000", typ, usd)
	}

	var types []string
	pages := 0
	paginator := pricing.NewGetProductsPaginator(client, &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters:     []pricingtypes.Filter{filter("regionCode", "us-east-1")},
		MaxResults:  aws.Int32(2),
	})
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, doc := range page.PriceList {
			typ, _ := readPriceDocument(t, doc)
			types = append(types, typ)
		}
	}
	slices.Sort(types)
	if want := []string{"c5.large", "c5.xlarge", "m5.2xlarge", "m5.large", "m5.xlarge"}; !slices.Equal(types, want) || pages != 3 {
		t.Errorf("paged us-east-1 products = %v in %d pages, want %v in 3", types, pages, want)
	}
	if n := f.Calls()["pricing:GetProducts"]; n != 4 {
		t.Errorf("pricing:GetProducts calls = %d, want 4", n)
	}
}

// readPriceDocument reads a PriceList entry the way a client of the real
// Pricing API would.
func readPriceDocument(t *testing.T, doc string) (instanceType, usd string) {
	t.Helper()
	var d struct {
		Product struct {
			Attributes map[string]string `json:"attributes"`
		} `json:"product"`
		Terms struct {
			OnDemand map[string]struct {
				PriceDimensions map[string]struct {
					Unit         string            `json:"unit"`
					PricePerUnit map[string]string `json:"pricePerUnit"`
				} `json:"priceDimensions"`
			} `json:"OnDemand"`
		} `json:"terms"`
	}
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatalf("price document %s: %v", doc, err)
	}
	for _, term := range d.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			if dim.Unit == "Hrs" {
				return d.Product.Attributes["instanceType"], dim.PricePerUnit["USD"]
			}
		}
	}
	t.Fatalf("price document %s has no hourly on-demand price", doc)
	return "", ""
}

// fleetWorld is a VPC, subnet, security group and launch template in moto.
type fleetWorld struct {
	subnet, zone, securityGroup, template string
}

func newFleetWorld(t *testing.T, client *ec2.Client) fleetWorld {
	t.Helper()
	ctx := context.Background()
	w := fleetWorld{zone: "us-east-1a"}
	vpc, err := client.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	subnet, err := client.CreateSubnet(ctx, &ec2.CreateSubnetInput{
		VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String("10.0.1.0/24"), AvailabilityZone: aws.String(w.zone),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.subnet = aws.ToString(subnet.Subnet.SubnetId)
	sg, err := client.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		VpcId: vpc.Vpc.VpcId, GroupName: aws.String("nodes"), Description: aws.String("nodes"),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.securityGroup = aws.ToString(sg.GroupId)
	images, err := client.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(images.Images) == 0 {
		t.Fatal("moto has no amazon images")
	}
	lt, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("nodes"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:          images.Images[0].ImageId,
			SecurityGroupIds: []string{w.securityGroup},
			MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
				HttpTokens: ec2types.LaunchTemplateHttpTokensStateRequired,
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.template = aws.ToString(lt.LaunchTemplate.LaunchTemplateId)
	return w
}

// launch asks for one instance of either type, the first override naming
// its zone only through the subnet, the second naming it too.
func (w fleetWorld) launch(t *testing.T, client *ec2.Client, capacityType ec2types.DefaultTargetCapacityType) *ec2.CreateFleetOutput {
	t.Helper()
	out, err := client.CreateFleet(context.Background(), &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: capacityType,
		},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
				LaunchTemplateId: aws.String(w.template), Version: aws.String("$Latest"),
			},
			Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
				{InstanceType: ec2types.InstanceTypeM5Large, SubnetId: aws.String(w.subnet)},
				{InstanceType: ec2types.InstanceTypeC5Large, SubnetId: aws.String(w.subnet), AvailabilityZone: aws.String(w.zone)},
			},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func launchedTypes(out *ec2.CreateFleetOutput) []string {
	var types []string
	for _, i := range out.Instances {
		for range i.InstanceIds {
			types = append(types, string(i.InstanceType))
		}
	}
	return types
}

func errorTypes(t *testing.T, out *ec2.CreateFleetOutput, capacityType string) []string {
	t.Helper()
	var types []string
	for _, e := range out.Errors {
		if aws.ToString(e.ErrorCode) != "InsufficientInstanceCapacity" || string(e.Lifecycle) != capacityType ||
			e.LaunchTemplateAndOverrides == nil || e.LaunchTemplateAndOverrides.Overrides == nil {
			t.Errorf("fleet error %+v, want an InsufficientInstanceCapacity %s error with its overrides", e, capacityType)
			continue
		}
		types = append(types, string(e.LaunchTemplateAndOverrides.Overrides.InstanceType))
	}
	return types
}

func TestFrontCreateFleetSkipsOfferingsOutOfCapacity(t *testing.T) {
	f := testaws.NewFront(t, testaws.Start(t))
	client := ec2.NewFromConfig(f.Config())
	w := newFleetWorld(t, client)

	f.SetInsufficientCapacity("m5.large", w.zone, "on-demand", true)
	out := w.launch(t, client, ec2types.DefaultTargetCapacityTypeOnDemand)
	if got := launchedTypes(out); !slices.Equal(got, []string{"c5.large"}) {
		t.Errorf("launched %v, want [c5.large]", got)
	}
	if got := errorTypes(t, out, "on-demand"); !slices.Equal(got, []string{"m5.large"}) {
		t.Errorf("errors for %v, want [m5.large]", got)
	}
	if e := out.Errors[0].LaunchTemplateAndOverrides; aws.ToString(e.Overrides.SubnetId) != w.subnet ||
		aws.ToString(e.Overrides.AvailabilityZone) != w.zone || aws.ToString(e.LaunchTemplateSpecification.LaunchTemplateId) != w.template {
		t.Errorf("error names %+v %+v, want subnet %s in %s of %s", e.Overrides, e.LaunchTemplateSpecification, w.subnet, w.zone, w.template)
	}
	id := out.Instances[0].InstanceIds[0]
	groups, tokens, ok := f.LaunchTemplate(id)
	if !ok || !slices.Equal(groups, []string{w.securityGroup}) || tokens != "required" {
		t.Errorf("LaunchTemplate(%s) = %v, %q, %v; want [%s], required, true", id, groups, tokens, ok, w.securityGroup)
	}

	// Spot capacity of the same offering is another pool.
	out = w.launch(t, client, ec2types.DefaultTargetCapacityTypeSpot)
	if got := launchedTypes(out); !slices.Equal(got, []string{"m5.large"}) || len(out.Errors) != 0 {
		t.Errorf("spot launched %v with errors %v, want [m5.large] and none", got, out.Errors)
	}

	f.SetInsufficientCapacity("c5.large", w.zone, "on-demand", true)
	out = w.launch(t, client, ec2types.DefaultTargetCapacityTypeOnDemand)
	if got := launchedTypes(out); len(got) != 0 || aws.ToString(out.FleetId) == "" {
		t.Errorf("launched %v in fleet %q, want nothing in a fleet", got, aws.ToString(out.FleetId))
	}
	if got := errorTypes(t, out, "on-demand"); !slices.Equal(got, []string{"m5.large", "c5.large"}) {
		t.Errorf("errors for %v, want [m5.large c5.large]", got)
	}

	f.SetInsufficientCapacity("m5.large", w.zone, "on-demand", false)
	out = w.launch(t, client, ec2types.DefaultTargetCapacityTypeOnDemand)
	if got := launchedTypes(out); !slices.Equal(got, []string{"m5.large"}) {
		t.Errorf("after clearing m5.large, launched %v, want [m5.large]", got)
	}
	if got := errorTypes(t, out, "on-demand"); !slices.Equal(got, []string{"c5.large"}) {
		t.Errorf("after clearing m5.large, errors for %v, want [c5.large]", got)
	}

	if n := f.Calls()["ec2:CreateFleet"]; n != 4 {
		t.Errorf("ec2:CreateFleet calls = %d, want 4", n)
	}
}

package aws

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

var errNotUsed = errors.New("not used by this test")

// statusEC2 is an EC2API: subnets and groups from netFake, images from
// imagesFake, RunInstances answering runErr; the calls Resolve does not
// make fail.
type statusEC2 struct {
	*netFake
	*imagesFake
	runErr error
	runs   []*ec2.RunInstancesInput
}

func (f *statusEC2) RunInstances(_ context.Context, in *ec2.RunInstancesInput, _ ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error) {
	f.runs = append(f.runs, in)
	if f.runErr != nil {
		return nil, f.runErr
	}
	return &ec2.RunInstancesOutput{}, nil
}

func (f *statusEC2) DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	return nil, errNotUsed
}

func (f *statusEC2) DescribeInstanceTypeOfferings(context.Context, *ec2.DescribeInstanceTypeOfferingsInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	return nil, errNotUsed
}

func (f *statusEC2) DescribeAvailabilityZones(context.Context, *ec2.DescribeAvailabilityZonesInput, ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error) {
	return nil, errNotUsed
}

func (f *statusEC2) CreateLaunchTemplate(context.Context, *ec2.CreateLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error) {
	return nil, errNotUsed
}

func (f *statusEC2) DescribeLaunchTemplates(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error) {
	return nil, errNotUsed
}

func (f *statusEC2) DeleteLaunchTemplate(context.Context, *ec2.DeleteLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error) {
	return nil, errNotUsed
}

func (f *statusEC2) CreateFleet(context.Context, *ec2.CreateFleetInput, ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error) {
	return nil, errNotUsed
}

func (f *statusEC2) DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	return nil, errNotUsed
}

func (f *statusEC2) TerminateInstances(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	return nil, errNotUsed
}

var _ EC2API = (*statusEC2)(nil)

// iamFake keeps instance profiles by name and records the calls that change
// them.
type iamFake struct {
	profiles map[string][]string // name -> role names
	getErr   error
	calls    []string
	created  []*iam.CreateInstanceProfileInput
}

func (f *iamFake) GetInstanceProfile(_ context.Context, in *iam.GetInstanceProfileInput, _ ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error) {
	name := aws.ToString(in.InstanceProfileName)
	f.calls = append(f.calls, "Get "+name)
	if f.getErr != nil {
		return nil, f.getErr
	}
	roles, ok := f.profiles[name]
	if !ok {
		return nil, &iamtypes.NoSuchEntityException{Message: aws.String("Instance Profile " + name + " cannot be found.")}
	}
	p := &iamtypes.InstanceProfile{InstanceProfileName: aws.String(name)}
	for _, r := range roles {
		p.Roles = append(p.Roles, iamtypes.Role{RoleName: aws.String(r)})
	}
	return &iam.GetInstanceProfileOutput{InstanceProfile: p}, nil
}

func (f *iamFake) CreateInstanceProfile(_ context.Context, in *iam.CreateInstanceProfileInput, _ ...func(*iam.Options)) (*iam.CreateInstanceProfileOutput, error) {
	name := aws.ToString(in.InstanceProfileName)
	f.calls = append(f.calls, "Create "+name)
	f.created = append(f.created, in)
	f.profiles[name] = nil
	return &iam.CreateInstanceProfileOutput{InstanceProfile: &iamtypes.InstanceProfile{InstanceProfileName: in.InstanceProfileName}}, nil
}

func (f *iamFake) AddRoleToInstanceProfile(_ context.Context, in *iam.AddRoleToInstanceProfileInput, _ ...func(*iam.Options)) (*iam.AddRoleToInstanceProfileOutput, error) {
	name := aws.ToString(in.InstanceProfileName)
	f.calls = append(f.calls, "AddRole "+name+" "+aws.ToString(in.RoleName))
	f.profiles[name] = append(f.profiles[name], aws.ToString(in.RoleName))
	return &iam.AddRoleToInstanceProfileOutput{}, nil
}

func (f *iamFake) RemoveRoleFromInstanceProfile(_ context.Context, in *iam.RemoveRoleFromInstanceProfileInput, _ ...func(*iam.Options)) (*iam.RemoveRoleFromInstanceProfileOutput, error) {
	name := aws.ToString(in.InstanceProfileName)
	f.calls = append(f.calls, "RemoveRole "+name+" "+aws.ToString(in.RoleName))
	f.profiles[name] = nil
	return &iam.RemoveRoleFromInstanceProfileOutput{}, nil
}

func (f *iamFake) DeleteInstanceProfile(_ context.Context, in *iam.DeleteInstanceProfileInput, _ ...func(*iam.Options)) (*iam.DeleteInstanceProfileOutput, error) {
	f.calls = append(f.calls, "Delete "+aws.ToString(in.InstanceProfileName))
	return nil, errNotUsed
}

const (
	statusCluster = "demo"
	statusRegion  = "us-east-1"
	statusRoleARN = "arn:aws:iam::123456789012:role/nodes/DemoNodeRole"
)

// statusWorld is a Resolver over fakes where everything resolves: two
// subnets, a security group, an AL2023 image, the class's instance profile
// holding its role, and a dry run EC2 allows.
type statusWorld struct {
	ec2      *statusEC2
	ssm      *ssmFake
	iam      *iamFake
	resolver *Resolver
	class    *awsv1.EC2NodeClass
	profile  string
}

func newStatusWorld() *statusWorld {
	w := &statusWorld{
		ec2: &statusEC2{
			netFake: &netFake{
				subnets: [][]ec2types.Subnet{{ec2Subnet("subnet-1", "us-east-1a", "use1-az1", 100), ec2Subnet("subnet-2", "us-east-1b", "use1-az2", 200)}},
				groups:  [][]ec2types.SecurityGroup{{ec2Group("sg-1", "nodes")}},
			},
			imagesFake: &imagesFake{byID: map[string]ec2types.Image{
				"ami-std": image("ami-std", "al2023", "2024-08-01T00:00:00.000Z", ec2types.ArchitectureValuesX8664),
			}},
			runErr: &smithy.GenericAPIError{Code: "DryRunOperation", Message: "Request would have succeeded, but DryRun flag is set."},
		},
		ssm: &ssmFake{params: map[string]string{stdAMD64: "ami-std"}},
		class: &awsv1.EC2NodeClass{
			ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "uid-1", Generation: 3},
			Spec: awsv1.EC2NodeClassSpec{
				SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": statusCluster}}},
				SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": statusCluster}}},
				AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
				Role:                       statusRoleARN,
				Tags:                       map[string]string{"team": "web"},
			},
		},
		profile: InstanceProfileName(statusCluster, statusRegion, "default"),
	}
	w.iam = &iamFake{profiles: map[string][]string{w.profile: {"DemoNodeRole"}}}
	w.resolver = &Resolver{EC2: w.ec2, SSM: w.ssm, IAM: w.iam, ClusterName: statusCluster, Region: statusRegion,
		KubernetesVersion: "1.30", Now: func() time.Time { return time.Date(2024, 9, 1, 0, 0, 0, 0, time.UTC) }}
	return w
}

func (w *statusWorld) resolve() awsv1.EC2NodeClassStatus {
	return w.resolver.Resolve(context.Background(), w.class)
}

func condition(t *testing.T, st awsv1.EC2NodeClassStatus, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, st.Conditions)
	}
	return *c
}

func TestResolveAllGoodIsReady(t *testing.T) {
	w := newStatusWorld()
	st := w.resolve()
	for _, typ := range append(partConditions, ConditionReady) {
		if c := condition(t, st, typ); c.Status != metav1.ConditionTrue || c.ObservedGeneration != 3 {
			t.Errorf("%s = %s (%s: %s), generation %d; want True at generation 3", typ, c.Status, c.Reason, c.Message, c.ObservedGeneration)
		}
	}
	if ids := joinIDs(st.Subnets, func(s awsv1.Subnet) string { return s.ID }); ids != "subnet-2,subnet-1" {
		t.Errorf("subnets %s, want subnet-2,subnet-1 (most free first)", ids)
	}
	if !reflect.DeepEqual(st.SecurityGroups, []awsv1.SecurityGroup{{ID: "sg-1", Name: "nodes"}}) {
		t.Errorf("security groups %+v", st.SecurityGroups)
	}
	if len(st.AMIs) != 1 || st.AMIs[0].ID != "ami-std" {
		t.Errorf("AMIs %+v, want ami-std", st.AMIs)
	}
	if st.InstanceProfile != w.profile {
		t.Errorf("instance profile %q, want %q", st.InstanceProfile, w.profile)
	}
	if meta.FindStatusCondition(st.Conditions, ConditionPricesLive) != nil {
		t.Error("PricesLive set without a PriceStatus")
	}
	if len(w.ec2.runs) != 1 {
		t.Fatalf("%d RunInstances calls, want one dry run", len(w.ec2.runs))
	}
	run := w.ec2.runs[0]
	if !aws.ToBool(run.DryRun) || aws.ToString(run.ImageId) != "ami-std" || aws.ToString(run.SubnetId) != "subnet-2" ||
		!reflect.DeepEqual(run.SecurityGroupIds, []string{"sg-1"}) {
		t.Errorf("dry run %+v, want DryRun with ami-std, subnet-2, sg-1", run)
	}
	if len(run.TagSpecifications) == 0 || tagMap(run.TagSpecifications[0].Tags)["team"] != "web" {
		t.Errorf("dry run tags %+v must carry the class's tags", run.TagSpecifications)
	}
}

func TestResolveWithoutSubnetsIsNotReady(t *testing.T) {
	w := newStatusWorld()
	w.ec2.subnets = nil
	st := w.resolve()
	sub := condition(t, st, ConditionSubnetsReady)
	if sub.Status != metav1.ConditionFalse || sub.Reason != "SubnetsNotFound" || !strings.Contains(sub.Message, "spec.subnetSelectorTerms") {
		t.Errorf("SubnetsReady = %s %s %q; want False SubnetsNotFound naming spec.subnetSelectorTerms", sub.Status, sub.Reason, sub.Message)
	}
	ready := condition(t, st, ConditionReady)
	if ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, "SubnetsReady=False") {
		t.Errorf("Ready = %s %q; want False naming SubnetsReady=False", ready.Status, ready.Message)
	}
	// Validation needs a subnet, so it fails too; the parts that resolved
	// are not named.
	if !strings.Contains(ready.Message, "ValidationSucceeded=False") {
		t.Errorf("Ready message %q must name ValidationSucceeded=False", ready.Message)
	}
	for _, ok := range []string{ConditionSecurityGroupsReady, ConditionAMIsReady, ConditionInstanceProfileReady} {
		if strings.Contains(ready.Message, ok) {
			t.Errorf("Ready message %q names %s, which is True", ready.Message, ok)
		}
	}
	if len(w.ec2.runs) != 0 {
		t.Error("dry run attempted without a subnet")
	}
}

func TestResolveKeepsPreviousValuesWhenACallFails(t *testing.T) {
	w := newStatusWorld()
	w.class.Status = awsv1.EC2NodeClassStatus{
		Subnets:         []awsv1.Subnet{{ID: "subnet-old", Zone: "us-east-1c"}},
		SecurityGroups:  []awsv1.SecurityGroup{{ID: "sg-old"}},
		AMIs:            []awsv1.AMI{{ID: "ami-old"}},
		InstanceProfile: "old-profile",
	}
	w.ec2.groupErrs = map[int]error{0: &smithy.GenericAPIError{Code: "RequestLimitExceeded", Message: "Request limit exceeded."}}
	w.ssm.err = errors.New("ThrottlingException")
	w.iam.getErr = errors.New("Throttling")
	st := w.resolve()
	if !reflect.DeepEqual(st.SecurityGroups, []awsv1.SecurityGroup{{ID: "sg-old"}}) {
		t.Errorf("security groups %+v, want the previous [sg-old]", st.SecurityGroups)
	}
	if len(st.AMIs) != 1 || st.AMIs[0].ID != "ami-old" {
		t.Errorf("AMIs %+v, want the previous ami-old", st.AMIs)
	}
	if st.InstanceProfile != "old-profile" {
		t.Errorf("instance profile %q, want the previous old-profile", st.InstanceProfile)
	}
	if ids := joinIDs(st.Subnets, func(s awsv1.Subnet) string { return s.ID }); ids != "subnet-2,subnet-1" {
		t.Errorf("subnets %s: a call that succeeded must replace the previous", ids)
	}
	sg := condition(t, st, ConditionSecurityGroupsReady)
	if sg.Status != metav1.ConditionFalse || !strings.Contains(sg.Message, "RequestLimitExceeded") ||
		!strings.Contains(sg.Message, "spec.securityGroupSelectorTerms[0]") {
		t.Errorf("SecurityGroupsReady = %s %q; want False with AWS's error and the term", sg.Status, sg.Message)
	}
	for _, typ := range []string{ConditionAMIsReady, ConditionInstanceProfileReady, ConditionReady} {
		if c := condition(t, st, typ); c.Status != metav1.ConditionFalse {
			t.Errorf("%s = %s, want False", typ, c.Status)
		}
	}
	if c := condition(t, st, ConditionSubnetsReady); c.Status != metav1.ConditionTrue {
		t.Errorf("SubnetsReady = %s, want True", c.Status)
	}
	// Validation runs on what the status holds, previous values included.
	if len(w.ec2.runs) != 1 || !reflect.DeepEqual(w.ec2.runs[0].SecurityGroupIds, []string{"sg-old"}) ||
		aws.ToString(w.ec2.runs[0].ImageId) != "ami-old" {
		t.Errorf("dry run %+v, want it on sg-old and ami-old", w.ec2.runs)
	}
}

func TestResolveValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		runErr  error
		status  metav1.ConditionStatus
		message string
	}{
		{"dry run allowed", &smithy.GenericAPIError{Code: "DryRunOperation", Message: "Request would have succeeded"}, metav1.ConditionTrue, ""},
		{"EC2 ignores DryRun", nil, metav1.ConditionTrue, ""},
		{"unauthorized", &smithy.GenericAPIError{Code: "UnauthorizedOperation", Message: "You are not authorized to perform this operation."},
			metav1.ConditionFalse, "docs/aws.md"},
		{"other error", &smithy.GenericAPIError{Code: "InvalidAMIID.NotFound", Message: "The image id does not exist"},
			metav1.ConditionFalse, "dry-run RunInstances"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newStatusWorld()
			w.ec2.runErr = tc.runErr
			st := w.resolve()
			c := condition(t, st, ConditionValidationSucceeded)
			if c.Status != tc.status || !strings.Contains(c.Message, tc.message) {
				t.Errorf("ValidationSucceeded = %s %q; want %s containing %q", c.Status, c.Message, tc.status, tc.message)
			}
			if tc.status == metav1.ConditionFalse {
				if c.Reason != "ValidationFailed" {
					t.Errorf("reason %q, want ValidationFailed", c.Reason)
				}
				if r := condition(t, st, ConditionReady); r.Status != metav1.ConditionFalse || r.Message != "ValidationSucceeded=False" {
					t.Errorf("Ready = %s %q, want False naming only ValidationSucceeded=False", r.Status, r.Message)
				}
			}
		})
	}
	t.Run("unauthorized carries AWS's message", func(t *testing.T) {
		w := newStatusWorld()
		w.ec2.runErr = &smithy.GenericAPIError{Code: "UnauthorizedOperation", Message: "not authorized: ec2:CreateTags"}
		if c := condition(t, w.resolve(), ConditionValidationSucceeded); !strings.Contains(c.Message, "not authorized: ec2:CreateTags") {
			t.Errorf("message %q must carry AWS's", c.Message)
		}
	})
}

func TestResolveCreatesTheInstanceProfileForTheRole(t *testing.T) {
	w := newStatusWorld()
	w.iam.profiles = map[string][]string{}
	st := w.resolve()
	if st.InstanceProfile != w.profile {
		t.Errorf("instance profile %q, want %q", st.InstanceProfile, w.profile)
	}
	want := []string{"Get " + w.profile, "Create " + w.profile, "AddRole " + w.profile + " DemoNodeRole"}
	if !reflect.DeepEqual(w.iam.calls, want) {
		t.Errorf("IAM calls %v, want %v", w.iam.calls, want)
	}
	if len(w.iam.created) == 1 {
		in := w.iam.created[0]
		if p := aws.ToString(in.Path); p != "/nodewright/us-east-1/demo/uid-1/" {
			t.Errorf("path %q, want /nodewright/us-east-1/demo/uid-1/", p)
		}
		tags := map[string]string{}
		for _, tg := range in.Tags {
			tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
		}
		if tags[TagNodeClass] != "default" || tags["kubernetes.io/cluster/demo"] != "owned" || tags["topology.kubernetes.io/region"] != "us-east-1" {
			t.Errorf("profile tags %v, want the class, cluster and region", tags)
		}
	}
	if c := condition(t, st, ConditionInstanceProfileReady); c.Status != metav1.ConditionTrue {
		t.Errorf("InstanceProfileReady = %s %q", c.Status, c.Message)
	}
}

func TestResolveInstanceProfile(t *testing.T) {
	for _, tc := range []struct {
		name      string
		roles     []string // the profile's roles; nil: no profile
		role      string
		given     *string
		givenOK   bool
		wantCalls []string // with P for the profile's name
		wantErr   string
	}{
		{name: "role kept", roles: []string{"DemoNodeRole"}, role: statusRoleARN, wantCalls: []string{"Get P"}},
		{name: "plain role name", roles: []string{"DemoNodeRole"}, role: "DemoNodeRole", wantCalls: []string{"Get P"}},
		{name: "role changed", roles: []string{"OldRole"}, role: statusRoleARN,
			wantCalls: []string{"Get P", "RemoveRole P OldRole", "AddRole P DemoNodeRole"}},
		{name: "profile without role", roles: []string{}, role: statusRoleARN, wantCalls: []string{"Get P", "AddRole P DemoNodeRole"}},
		{name: "instance profile given", given: aws.String("my-profile"), givenOK: true, wantCalls: []string{"Get my-profile"}},
		{name: "instance profile given but missing", given: aws.String("nope"), wantCalls: []string{"Get nope"}, wantErr: "spec.instanceProfile nope"},
		{name: "neither", wantErr: "neither spec.role nor spec.instanceProfile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newStatusWorld()
			w.class.Spec.Role, w.class.Spec.InstanceProfile = tc.role, tc.given
			w.iam.profiles = map[string][]string{}
			if tc.roles != nil {
				w.iam.profiles[w.profile] = tc.roles
			}
			if tc.givenOK {
				w.iam.profiles[*tc.given] = []string{"Whatever"}
			}
			got, err := w.resolver.instanceProfile(context.Background(), w.class)
			var calls []string
			for _, c := range tc.wantCalls {
				calls = append(calls, strings.ReplaceAll(c, " P", " "+w.profile))
			}
			if !reflect.DeepEqual(w.iam.calls, calls) {
				t.Errorf("IAM calls %v, want %v", w.iam.calls, calls)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := w.profile
			if tc.given != nil {
				want = *tc.given
			}
			if got != want {
				t.Errorf("instance profile %q, want %q", got, want)
			}
		})
	}
}

func TestRoleNameFromARN(t *testing.T) {
	for in, want := range map[string]string{
		"DemoNodeRole": "DemoNodeRole",
		"arn:aws:iam::123456789012:role/DemoNodeRole":           "DemoNodeRole",
		"arn:aws:iam::123456789012:role/nodes/DemoNodeRole":     "DemoNodeRole",
		"arn:aws-us-gov:iam::123456789012:role/a/b/c/NodeRole":  "NodeRole",
		"arn:aws-cn:iam::123456789012:role/KarpenterNodeRole-x": "KarpenterNodeRole-x",
	} {
		if got := roleName(in); got != want {
			t.Errorf("roleName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolvePricesLiveDoesNotAffectReady(t *testing.T) {
	w := newStatusWorld()
	w.resolver.PriceStatus = func() (bool, string) { return false, "Pricing API unreachable; built-in prices" }
	st := w.resolve()
	if c := condition(t, st, ConditionPricesLive); c.Status != metav1.ConditionFalse || c.Reason != "BuiltinPrices" {
		t.Errorf("PricesLive = %s %s, want False BuiltinPrices", c.Status, c.Reason)
	}
	if c := condition(t, st, ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %s %q, want True", c.Status, c.Message)
	}
}

package livetest

import (
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	awsprovider "github.com/nodewright/nodewright/internal/cloudprovider/aws"
	"github.com/nodewright/nodewright/internal/testaws"
)

// TestNodeClassStatus resolves a class against moto: the tagged subnets
// (not the untagged one), the tagged group, the alias's image per
// architecture, a created instance profile holding the role, and Ready.
func TestNodeClassStatus(t *testing.T) {
	e := newEnv(t)
	e.class(t, "status", nil)
	got := e.reconcile(t, "status")
	st := got.Status
	for _, c := range []string{"SubnetsReady", "SecurityGroupsReady", "AMIsReady", "InstanceProfileReady", "ValidationSucceeded", "Ready"} {
		if !meta.IsStatusConditionTrue(st.Conditions, c) {
			t.Errorf("condition %s is not True: %+v", c, meta.FindStatusCondition(st.Conditions, c))
		}
	}
	var subnets []string
	for _, s := range st.Subnets {
		subnets = append(subnets, s.ID+"@"+s.Zone)
		if s.ZoneID == "" {
			t.Errorf("subnet %s has no zone ID", s.ID)
		}
	}
	want := []string{e.subnets["us-east-1a"] + "@us-east-1a", e.subnets["us-east-1b"] + "@us-east-1b"}
	slices.Sort(subnets)
	slices.Sort(want)
	if !slices.Equal(subnets, want) {
		t.Errorf("subnets = %v, want %v", subnets, want)
	}
	if len(st.SecurityGroups) != 1 || st.SecurityGroups[0].ID != e.group {
		t.Errorf("security groups = %+v, want only %s", st.SecurityGroups, e.group)
	}
	amis := map[string]string{}
	for _, a := range st.AMIs {
		amis[a.ID] = a.Requirements[0].Values[0]
	}
	if amis[e.images["x86_64"][0]] != "amd64" || amis[e.images["arm64"][0]] != "arm64" || len(amis) != 2 {
		t.Errorf("AMIs = %+v, want %s (amd64) and %s (arm64)", st.AMIs, e.images["x86_64"][0], e.images["arm64"][0])
	}
	if want := awsprovider.InstanceProfileName(clusterName, "us-east-1", "status"); st.InstanceProfile != want {
		t.Errorf("instance profile = %q, want %q", st.InstanceProfile, want)
	}
	if len(got.Finalizers) != 1 {
		t.Errorf("finalizers = %v, want the termination finalizer", got.Finalizers)
	}
}

// TestNodeClassNotReady: a class whose subnet terms select nothing is not
// Ready, says which part failed, and its NodePool launches nothing.
func TestNodeClassNotReady(t *testing.T) {
	e := newEnv(t)
	e.class(t, "nosubnets", func(nc *awsv1.EC2NodeClass) {
		nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"missing": "tag"}}}
	})
	got := e.reconcile(t, "nosubnets")
	ready := meta.FindStatusCondition(got.Status.Conditions, "Ready")
	if ready == nil || ready.Status != "False" || !strings.Contains(ready.Message, "SubnetsReady=False") {
		t.Fatalf("Ready = %+v, want False naming SubnetsReady", ready)
	}
	np := &karpv1.NodePool{}
	np.Name = "pool"
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "nosubnets"}
	_, err := e.provider.InstanceTypes(context.Background(), np)
	var notReady *cloudprovider.NodeClassNotReadyError
	if !errors.As(err, &notReady) || !strings.Contains(err.Error(), "spec.subnetSelectorTerms select no subnet") {
		t.Fatalf("InstanceTypes error = %v, want a NodeClassNotReadyError naming the subnet terms", err)
	}
}

// TestLaunchGetListDelete launches a NodeClaim through CreateFleet and
// checks what EC2 got: the cheapest type, a tagged subnet in its zone, the
// class's security group, IMDSv2, the AMI of its architecture, the tags;
// then that Create is idempotent, and Get, List and Delete agree.
func TestLaunchGetListDelete(t *testing.T) {
	e := newEnv(t)
	e.class(t, "launch", nil)
	class := e.reconcile(t, "launch")
	nc := claim(t, "launch-1", "launch", "1500m", req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))
	ctx, cancel := deadline()
	defer cancel()

	before := e.front.Calls()
	out, err := e.provider.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	calls := testaws.CallsSince(before, e.front.Calls())
	t.Logf("AWS calls for one NodeClaim (first of its launch template): %v", calls)
	if calls["ec2:CreateFleet"] != 1 || calls["ec2:CreateLaunchTemplate"] != 1 {
		t.Errorf("calls = %v, want one CreateFleet and one CreateLaunchTemplate", calls)
	}
	id := strings.TrimPrefix(out.Status.ProviderID, "aws:///"+out.Labels[corev1.LabelTopologyZone]+"/")
	if !strings.HasPrefix(id, "i-") {
		t.Fatalf("provider ID %q is not aws:///<zone>/<instance-id>", out.Status.ProviderID)
	}
	inst := e.instance(t, id)
	if got := string(inst.InstanceType); got != out.Labels[corev1.LabelInstanceTypeStable] {
		t.Errorf("instance type %s, claim says %s", got, out.Labels[corev1.LabelInstanceTypeStable])
	}
	// The cheapest amd64 on-demand type with 1.5 vCPU allocatable.
	types, err := e.provider.InstanceTypes(ctx, poolFor("launch"))
	if err != nil {
		t.Fatal(err)
	}
	if want := cheapest(types, nc); string(inst.InstanceType) != want {
		t.Errorf("launched %s, the cheapest fitting on-demand type is %s", inst.InstanceType, want)
	}
	zone := aws.ToString(inst.Placement.AvailabilityZone)
	if aws.ToString(inst.SubnetId) != e.subnets[zone] {
		t.Errorf("instance in subnet %s of %s, want the tagged subnet %s", aws.ToString(inst.SubnetId), zone, e.subnets[zone])
	}
	if aws.ToString(inst.ImageId) != e.images["x86_64"][0] || out.Status.ImageID != e.images["x86_64"][0] {
		t.Errorf("image %s (claim %s), want the al2023 x86_64 image %s", aws.ToString(inst.ImageId), out.Status.ImageID, e.images["x86_64"][0])
	}
	groups, tokens, ok := e.front.LaunchTemplate(id)
	if !ok || !slices.Equal(groups, []string{e.group}) || tokens != "required" {
		t.Errorf("launch template security groups %v, HttpTokens %q, want [%s] and required", groups, tokens, e.group)
	}
	tags := map[string]string{}
	for _, tag := range inst.Tags {
		tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	for k, v := range map[string]string{"karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": "launch-1",
		"karpenter.k8s.aws/ec2nodeclass": "launch", "kubernetes.io/cluster/live": "owned", "eks:eks-cluster-name": "live", "team": "platform"} {
		if tags[k] != v {
			t.Errorf("tag %s = %q, want %q (tags %v)", k, tags[k], v, tags)
		}
	}
	if out.Status.Allocatable.Cpu().Cmp(mustQuantity("1500m")) < 0 {
		t.Errorf("allocatable cpu %s < requested 1500m", out.Status.Allocatable.Cpu())
	}
	e.checkUserData(t, class, inst)

	// A second claim of the same template: the template ID is cached.
	second := claim(t, "launch-2", "launch", "1500m", req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))
	before = e.front.Calls()
	if _, err := e.provider.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	calls = testaws.CallsSince(before, e.front.Calls())
	t.Logf("AWS calls for a later NodeClaim of the same launch template: %v", calls)
	if want := map[string]int{"ec2:DescribeInstances": 2, "ec2:CreateFleet": 1}; !maps.Equal(calls, want) {
		t.Errorf("calls = %v, want %v", calls, want)
	}

	again, err := e.provider.Create(ctx, nc)
	if err != nil || again.Status.ProviderID != out.Status.ProviderID {
		t.Fatalf("second Create = %v, %v; want the same instance %s", again, err, out.Status.ProviderID)
	}
	got, err := e.provider.Get(ctx, out.Status.ProviderID)
	if err != nil || got.Name != "launch-1" {
		t.Fatalf("Get = %v, %v", got, err)
	}
	all, err := e.provider.List(ctx)
	if err != nil || len(all) != 2 || all[0].Status.ProviderID != out.Status.ProviderID || all[1].Name != "launch-2" {
		t.Fatalf("List = %v, %v; want %s and launch-2's", all, err, out.Status.ProviderID)
	}
	nc.Status.ProviderID = out.Status.ProviderID
	if err := e.provider.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, err := e.provider.Get(ctx, out.Status.ProviderID); !cloudprovider.IsNotFound(err) {
		t.Errorf("Get after Delete = %v, want not found", err)
	}
	if err := e.provider.Delete(ctx, nc); !cloudprovider.IsNotFound(err) {
		t.Errorf("second Delete = %v, want not found", err)
	}
}

// TestNeverTerminatesForeignInstances: an instance without the cluster's
// tags is neither listed nor terminated.
func TestNeverTerminatesForeignInstances(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := deadline()
	defer cancel()
	run, err := e.ec2.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(e.images["x86_64"][0]), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		InstanceType: ec2types.InstanceTypeM5Large, SubnetId: aws.String(e.subnets["us-east-1a"])})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(run.Instances[0].InstanceId)
	all, err := e.provider.List(ctx)
	if err != nil || len(all) != 0 {
		t.Fatalf("List = %v, %v; want nothing", all, err)
	}
	foreign := &karpv1.NodeClaim{}
	foreign.Name = "foreign"
	foreign.Status.ProviderID = awsprovider.ProviderID("us-east-1a", id)
	if err := e.provider.Delete(ctx, foreign); err == nil || !strings.Contains(err.Error(), "refusing to terminate") {
		t.Fatalf("Delete of a foreign instance = %v, want a refusal", err)
	}
	if st := e.instance(t, id).State.Name; st != ec2types.InstanceStateNameRunning {
		t.Errorf("foreign instance is %s, want running", st)
	}
}

// TestInsufficientCapacityFallsBack: with the cheapest offering out of
// capacity, the same Create launches the next one and the short offering
// is marked unavailable for the solver.
func TestInsufficientCapacityFallsBack(t *testing.T) {
	e := newEnv(t)
	e.class(t, "ice", nil)
	e.reconcile(t, "ice")
	ctx, cancel := deadline()
	defer cancel()
	nc := claim(t, "ice-1", "ice", "1500m", req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
		req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-east-1a"))
	types, err := e.provider.InstanceTypes(ctx, poolFor("ice"))
	if err != nil {
		t.Fatal(err)
	}
	first := cheapest(types, nc)
	for _, capacity := range []string{"on-demand"} {
		e.front.SetInsufficientCapacity(first, "us-east-1a", capacity, true)
	}
	out, err := e.provider.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Labels[corev1.LabelInstanceTypeStable]; got == first {
		t.Fatalf("launched %s, which is out of capacity", got)
	}
	types, err = e.provider.InstanceTypes(ctx, poolFor("ice"))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		if it.Name != first {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == "us-east-1a" && o.CapacityType == "on-demand" && o.Available {
				t.Errorf("%s us-east-1a on-demand is still available after insufficient capacity", first)
			}
		}
	}
	t.Logf("%s short in us-east-1a; launched %s", first, out.Labels[corev1.LabelInstanceTypeStable])
}

// TestAMIDrift: when the alias's parameter names a newer image, the class's
// AMIs change and a claim on the old image drifts.
func TestAMIDrift(t *testing.T) {
	e := newEnv(t)
	e.class(t, "drift", nil)
	e.reconcile(t, "drift")
	ctx, cancel := deadline()
	defer cancel()
	nc := claim(t, "drift-1", "drift", "1", req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))
	out, err := e.provider.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if reason, err := e.provider.IsDrifted(ctx, out); err != nil || reason != "" {
		t.Fatalf("IsDrifted before the release = %q, %v; want none", reason, err)
	}
	e.front.SetParameter(al2023Parameter("x86_64"), e.images["x86_64"][1])
	class := e.reconcile(t, "drift")
	if !slices.ContainsFunc(class.Status.AMIs, func(a awsv1.AMI) bool { return a.ID == e.images["x86_64"][1] }) {
		t.Fatalf("AMIs %+v lack the new image %s", class.Status.AMIs, e.images["x86_64"][1])
	}
	if reason, err := e.provider.IsDrifted(ctx, out); err != nil || reason != awsprovider.DriftAMI {
		t.Fatalf("IsDrifted after the release = %q, %v; want %s", reason, err, awsprovider.DriftAMI)
	}
}

func (e *env) instance(t *testing.T, id string) ec2types.Instance {
	t.Helper()
	out, err := e.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		t.Fatalf("describing %s: %v %v", id, out, err)
	}
	return out.Reservations[0].Instances[0]
}

// checkUserData reads the instance's launch template's user data: the
// nodeadm NodeConfig of cluster "live" with the claim's taints.
func (e *env) checkUserData(t *testing.T, class *awsv1.EC2NodeClass, inst ec2types.Instance) {
	t.Helper()
	ctx := context.Background()
	lts, err := e.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil || len(lts.LaunchTemplates) == 0 {
		t.Fatalf("launch templates: %v %v", lts, err)
	}
	v, err := e.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: lts.LaunchTemplates[0].LaunchTemplateId})
	if err != nil || len(v.LaunchTemplateVersions) == 0 {
		t.Fatalf("launch template versions: %v %v", v, err)
	}
	data := v.LaunchTemplateVersions[0].LaunchTemplateData
	raw, err := base64.StdEncoding.DecodeString(aws.ToString(data.UserData))
	if err != nil {
		t.Fatal(err)
	}
	ud := string(raw)
	for _, want := range []string{"application/node.eks.aws", "name: live", "apiServerEndpoint: https://127.0.0.1:6443", "cidr: 10.100.0.0/16", "karpenter.sh/unregistered", "team=platform"} {
		if !strings.Contains(ud, want) {
			t.Errorf("user data lacks %q:\n%s", want, ud)
		}
	}
	if data.IamInstanceProfile == nil || aws.ToString(data.IamInstanceProfile.Name) != class.Status.InstanceProfile {
		t.Errorf("launch template instance profile %+v, want %s", data.IamInstanceProfile, class.Status.InstanceProfile)
	}
}

func poolFor(class string) *karpv1.NodePool {
	np := &karpv1.NodePool{}
	np.Name = "default"
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: class}
	return np
}

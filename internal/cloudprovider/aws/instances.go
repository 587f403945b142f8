package aws

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// liveStates are the states of an instance that still exists for us; one
// shutting down or terminated is gone.
var liveStates = []string{"pending", "running", "stopping", "stopped"}

// ours are the filters that find only instances this cluster's provider
// launched: the cluster tag it sets "owned" and a NodeClaim tag.
func (p *Provider) ours() []ec2types.Filter {
	return []ec2types.Filter{
		{Name: aws.String("tag:" + clusterTag(p.opts.ClusterName)), Values: []string{"owned"}},
		{Name: aws.String("tag-key"), Values: []string{TagNodeClaim}},
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}
}

// launchedFor returns the live instance launched for the NodeClaim name, or
// nil.
func (p *Provider) launchedFor(ctx context.Context, name string) (*ec2types.Instance, error) {
	filters := append(p.ours(), ec2types.Filter{Name: aws.String("tag:" + TagNodeClaim), Values: []string{name}})
	out, err := p.describeAll(ctx, &ec2.DescribeInstancesInput{Filters: filters})
	if err != nil {
		return nil, fmt.Errorf("looking for an instance already launched for NodeClaim %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return &out[0], nil
}

func (p *Provider) describeAll(ctx context.Context, in *ec2.DescribeInstancesInput) ([]ec2types.Instance, error) {
	var out []ec2types.Instance
	pages := ec2.NewDescribeInstancesPaginator(p.ec2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instances: %w", err)
		}
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
	}
	return out, nil
}

// describe returns one instance by ID, or a *NotFoundError.
func (p *Provider) describe(ctx context.Context, id string) (*ec2types.Instance, error) {
	out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if isCode(err, "InvalidInstanceID.NotFound") {
		return nil, &cloudprovider.NotFoundError{ProviderID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("describing instance %s: %w", id, err)
	}
	for _, r := range out.Reservations {
		for i := range r.Instances {
			if aws.ToString(r.Instances[i].InstanceId) == id {
				return &r.Instances[i], nil
			}
		}
	}
	return nil, &cloudprovider.NotFoundError{ProviderID: id}
}

// Get returns the instance with providerID, read from EC2 now, or a
// *NotFoundError when it does not exist, is shutting down or terminated,
// or is not one this cluster launched.
func (p *Provider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	id, err := parseProviderID(providerID)
	if err != nil {
		return nil, err
	}
	inst, err := p.describe(ctx, id)
	if cloudprovider.IsNotFound(err) {
		return nil, &cloudprovider.NotFoundError{ProviderID: providerID}
	}
	if err != nil {
		return nil, err
	}
	if !p.isOurs(*inst) || !slices.Contains(liveStates, string(inst.State.Name)) {
		return nil, &cloudprovider.NotFoundError{ProviderID: providerID}
	}
	return p.instanceClaim(*inst), nil
}

func (p *Provider) isOurs(inst ec2types.Instance) bool {
	tags := tagMap(inst.Tags)
	return tags[clusterTag(p.opts.ClusterName)] == "owned" && tags[TagNodeClaim] != ""
}

// List returns every live instance this cluster launched, by NodeClaim name.
func (p *Provider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	insts, err := p.describeAll(ctx, &ec2.DescribeInstancesInput{Filters: p.ours()})
	if err != nil {
		return nil, fmt.Errorf("listing instances of cluster %s: %w", p.opts.ClusterName, err)
	}
	var out []*karpv1.NodeClaim
	for _, inst := range insts {
		if p.isOurs(inst) {
			out = append(out, p.instanceClaim(inst))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// instanceClaim describes an instance as a NodeClaim: its claim's name,
// labels of its type, zone and capacity type, and status.
func (p *Provider) instanceClaim(inst ec2types.Instance) *karpv1.NodeClaim {
	tags := tagMap(inst.Tags)
	zone := aws.ToString(inst.Placement.AvailabilityZone)
	capacityType := karpv1.CapacityTypeOnDemand
	if inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		capacityType = karpv1.CapacityTypeSpot
	}
	out := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: tags[TagNodeClaim],
			Labels: map[string]string{
				corev1.LabelInstanceTypeStable: string(inst.InstanceType),
				corev1.LabelTopologyZone:       zone,
				karpv1.CapacityTypeLabelKey:    capacityType,
				karpv1.NodePoolLabelKey:        tags[TagNodePool],
			},
			Annotations: map[string]string{AnnotationSubnet: aws.ToString(inst.SubnetId)},
		},
		Status: karpv1.NodeClaimStatus{ProviderID: ProviderID(zone, aws.ToString(inst.InstanceId)), ImageID: aws.ToString(inst.ImageId)},
	}
	if inst.LaunchTime != nil {
		out.CreationTimestamp = metav1.NewTime(*inst.LaunchTime)
	}
	return out
}

// Delete terminates claim's instance. It returns a *NotFoundError once the
// instance is shutting down or gone, so the caller knows it is done. A claim
// without a provider ID is looked for by its tag: the controller may have
// crashed between launching and saving the ID.
func (p *Provider) Delete(ctx context.Context, claim *karpv1.NodeClaim) error {
	var id string
	if claim.Status.ProviderID == "" {
		inst, err := p.launchedFor(ctx, claim.Name)
		if err != nil {
			return err
		}
		if inst == nil {
			return &cloudprovider.NotFoundError{ProviderID: "(NodeClaim " + claim.Name + ")"}
		}
		id = aws.ToString(inst.InstanceId)
	} else {
		var err error
		if id, err = parseProviderID(claim.Status.ProviderID); err != nil {
			return err
		}
		inst, err := p.describe(ctx, id)
		if cloudprovider.IsNotFound(err) {
			return &cloudprovider.NotFoundError{ProviderID: claim.Status.ProviderID}
		}
		if err != nil {
			return err
		}
		if !p.isOurs(*inst) {
			return fmt.Errorf("refusing to terminate %s: it lacks this cluster's tags (%s=owned and %s), so nodewright did not launch it",
				id, clusterTag(p.opts.ClusterName), TagNodeClaim)
		}
		if !slices.Contains(liveStates, string(inst.State.Name)) {
			return &cloudprovider.NotFoundError{ProviderID: claim.Status.ProviderID}
		}
	}
	if _, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		if isCode(err, "InvalidInstanceID.NotFound") {
			return &cloudprovider.NotFoundError{ProviderID: claim.Status.ProviderID}
		}
		return fmt.Errorf("terminating instance %s of NodeClaim %s: %w", id, claim.Name, err)
	}
	log.FromContext(ctx).Info("terminated instance", "nodeclaim", claim.Name, "instance", id)
	return nil
}

// IsDrifted says why claim's instance no longer matches its EC2NodeClass:
// its image is no longer among the class's AMIs, its subnet no longer among
// its subnets, its security groups differ, or a field that shapes instances
// changed (the class hash). "" means it matches or cannot be told yet.
func (p *Provider) IsDrifted(ctx context.Context, claim *karpv1.NodeClaim) (string, error) {
	class, err := p.nodeClass(ctx, "NodeClaim "+claim.Name, claim.Spec.NodeClassRef)
	if err != nil {
		return "", err
	}
	return Drift(claim, class), nil
}

// Drift is IsDrifted's decision over a claim and its class.
func Drift(claim *karpv1.NodeClaim, class *awsv1.EC2NodeClass) string {
	if img := claim.Status.ImageID; img != "" && len(class.Status.AMIs) > 0 &&
		!slices.ContainsFunc(class.Status.AMIs, func(a awsv1.AMI) bool { return a.ID == img }) {
		return DriftAMI
	}
	if s := claim.Annotations[AnnotationSubnet]; s != "" && len(class.Status.Subnets) > 0 &&
		!slices.ContainsFunc(class.Status.Subnets, func(n awsv1.Subnet) bool { return n.ID == s }) {
		return DriftSubnet
	}
	if g, ok := claim.Annotations[AnnotationSecurityGroups]; ok && len(class.Status.SecurityGroups) > 0 &&
		g != joinIDs(class.Status.SecurityGroups, func(g awsv1.SecurityGroup) string { return g.ID }) {
		return DriftSecurityGroups
	}
	if h, ok := claim.Annotations[AnnotationNodeClassHash]; ok && h != NodeClassHash(class) {
		return DriftNodeClass
	}
	return ""
}

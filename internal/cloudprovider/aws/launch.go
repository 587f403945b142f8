package aws

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// candidate is an offering a NodeClaim may launch as.
type candidate struct {
	it       *instancetype.InstanceType
	offering instancetype.Offering
	ami      *awsv1.AMI
	subnet   string
}

func (c candidate) id() cloudprovider.Offering { return offeringOf(c.it.Name, c.offering) }

// Create launches one instance for claim with CreateFleet (type instant)
// over the claim's cheapest allowed types and zones: spot when the claim
// allows it and a spot offering exists (price-capacity-optimized), else
// on-demand (lowest-price). Offerings EC2 reports short of capacity are
// marked unavailable and the next try leaves them out, within this call.
// An instance already launched for the claim (a controller that crashed
// before saving the result) is returned instead of launching another.
func (p *Provider) Create(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	logger := log.FromContext(ctx).WithValues("nodeclaim", claim.Name)
	class, err := p.nodeClass(ctx, "NodeClaim "+claim.Name, claim.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	if existing, err := p.launchedFor(ctx, claim.Name); err != nil || existing != nil {
		if existing != nil {
			logger.Info("instance was launched before; returning it", "instance", aws.ToString(existing.InstanceId))
			return p.claimFrom(claim, class, *existing), nil
		}
		return nil, err
	}
	types, err := p.shapesFor(class)
	if err != nil {
		return nil, err
	}
	viewed := cloudprovider.Viewed(ctx, p.typeView(), claim, types)
	var tried []cloudprovider.Offering
	for try := 0; try < maxFleetTries; try++ {
		cands := p.candidates(claim, class, types, viewed)
		if len(cands) == 0 {
			break
		}
		inst, short, err := p.fleet(ctx, claim, class, cands)
		for _, o := range short {
			p.ice.Add(o)
			tried = append(tried, o)
			logger.Info("offering out of capacity, trying the next", "offering", o.String())
		}
		if err != nil {
			return nil, fmt.Errorf("launching NodeClaim %s: %w", claim.Name, err)
		}
		if inst != nil {
			out := p.claimFrom(claim, class, *inst)
			logger.Info("launched instance", "instance", aws.ToString(inst.InstanceId), "providerID", out.Status.ProviderID,
				"instanceType", string(inst.InstanceType), "zone", out.Labels[corev1.LabelTopologyZone],
				"capacityType", out.Labels[karpv1.CapacityTypeLabelKey])
			return out, nil
		}
		if len(short) == 0 {
			return nil, fmt.Errorf("launching NodeClaim %s: CreateFleet launched nothing and reported no error", claim.Name)
		}
	}
	return nil, &cloudprovider.InsufficientCapacityError{NodeClaim: claim.Name, Tried: tried}
}

// candidates are the offerings claim allows, in the capacity type to launch
// (spot when any spot offering is allowed), cheapest first, at most
// maxFleetTypes types. Fit and price are judged on viewed, types as the
// solver saw them (learned capacity, NodeOverlays; nil: types as they are);
// the machine launched is the type's own.
func (p *Provider) candidates(claim *karpv1.NodeClaim, class *awsv1.EC2NodeClass, types, viewed []*instancetype.InstanceType) []candidate {
	reqs := scheduling.NewRequirements()
	for _, r := range claim.Spec.Requirements {
		reqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	if len(viewed) != len(types) {
		viewed = types
	}
	subnets := subnetPerZone(class.Status.Subnets)
	var out []candidate
	for i, seen := range viewed {
		it := types[i]
		if seen.Requirements.Compatible(reqs) != nil || !cloudprovider.Fits(seen.Allocatable(), claim.Spec.Resources.Requests) {
			continue
		}
		ami := amiFor(class.Status.AMIs, it)
		for _, o := range seen.Offerings {
			if o.Available && o.Allowed(reqs) && subnets[o.Zone] != "" && !p.ice.Has(offeringOf(it.Name, o)) {
				out = append(out, candidate{it: it, offering: o, ami: ami, subnet: subnets[o.Zone]})
			}
		}
	}
	capacityType := karpv1.CapacityTypeOnDemand
	if slices.ContainsFunc(out, func(c candidate) bool { return c.offering.CapacityType == karpv1.CapacityTypeSpot }) {
		capacityType = karpv1.CapacityTypeSpot
	}
	out = slices.DeleteFunc(out, func(c candidate) bool { return c.offering.CapacityType != capacityType })
	slices.SortFunc(out, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.offering.Price, b.offering.Price), cmp.Compare(a.it.Name, b.it.Name), cmp.Compare(a.offering.Zone, b.offering.Zone))
	})
	seen := map[string]bool{}
	for i, c := range out {
		if !seen[c.it.Name] && len(seen) == maxFleetTypes {
			return out[:i]
		}
		seen[c.it.Name] = true
	}
	return out
}

// fleet makes one CreateFleet call over cands, which share a capacity type.
// It returns the instance launched, if any, and the offerings EC2 reported
// short of capacity.
func (p *Provider) fleet(ctx context.Context, claim *karpv1.NodeClaim, class *awsv1.EC2NodeClass, cands []candidate) (*ec2types.Instance, []cloudprovider.Offering, error) {
	capacityType := cands[0].offering.CapacityType
	// One launch template per AMI, and per max pods where the user data
	// must say it.
	type group struct {
		ami     *awsv1.AMI
		maxPods int64
	}
	byGroup := map[group][]candidate{}
	var order []group
	for _, c := range cands {
		g := group{ami: c.ami}
		if p.explicitMaxPods(class) {
			g.maxPods = c.it.Capacity.Pods().Value()
		}
		if _, ok := byGroup[g]; !ok {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], c)
	}
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	for _, g := range order {
		id, err := p.launchTemplate(ctx, claim, class, g.ami, int32(g.maxPods))
		if err != nil {
			return nil, nil, err
		}
		cfg := ec2types.FleetLaunchTemplateConfigRequest{LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
			LaunchTemplateId: aws.String(id), Version: aws.String("$Latest")}}
		for _, c := range byGroup[g] {
			ov := ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(c.it.Name),
				SubnetId: aws.String(c.subnet), AvailabilityZone: aws.String(c.offering.Zone)}
			if capacityType == karpv1.CapacityTypeSpot {
				// Ranks offerings for price-capacity-optimized where capacity ties.
				ov.Priority = aws.Float64(c.offering.Price)
			}
			cfg.Overrides = append(cfg.Overrides, ov)
		}
		configs = append(configs, cfg)
	}
	tags := ec2Tags(InstanceTags(p.opts.ClusterName, class, claim.Labels[karpv1.NodePoolLabelKey], claim.Name))
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(1),
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType),
		},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: tags},
		},
	}
	if capacityType == karpv1.CapacityTypeSpot {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	out, err := p.ec2.CreateFleet(ctx, in)
	if isCode(err, "InvalidLaunchTemplateId.NotFound") || isCode(err, "InvalidLaunchTemplateName.NotFoundException") {
		p.templates.Clear() // deleted behind our back; made again next try
	}
	if err != nil {
		return nil, nil, fmt.Errorf("CreateFleet: %w", err)
	}
	var short []cloudprovider.Offering
	var other []string
	for _, e := range out.Errors {
		code := aws.ToString(e.ErrorCode)
		if !capacityError(code) || e.LaunchTemplateAndOverrides == nil || e.LaunchTemplateAndOverrides.Overrides == nil {
			other = append(other, code+": "+aws.ToString(e.ErrorMessage))
			continue
		}
		ov := e.LaunchTemplateAndOverrides.Overrides
		zone := aws.ToString(ov.AvailabilityZone)
		if zone == "" {
			zone = zoneOfSubnet(class.Status.Subnets, aws.ToString(ov.SubnetId))
		}
		short = append(short, cloudprovider.Offering{InstanceType: string(ov.InstanceType), Zone: zone, CapacityType: capacityType})
	}
	for _, i := range out.Instances {
		if len(i.InstanceIds) == 0 {
			continue
		}
		inst, err := p.describe(ctx, i.InstanceIds[0])
		if err != nil {
			return nil, short, err
		}
		return inst, short, nil
	}
	if len(short) == 0 && len(other) > 0 {
		return nil, nil, fmt.Errorf("CreateFleet launched nothing: %s", strings.Join(other, "; "))
	}
	return nil, short, nil
}

// explicitMaxPods reports whether nodes of the class must be told their max
// pods. Without it the image's bootstrap computes the ENI-limited count, the
// same as our model's default, and one launch template serves every type.
func (p *Provider) explicitMaxPods(class *awsv1.EC2NodeClass) bool {
	k := class.Spec.Kubelet
	return p.opts.ReservedENIs > 0 || (k != nil && k.MaxPods != nil) || !familyOf(class.AMIFamily()).eniLimitedPodDensity
}

// capacityError reports whether a CreateFleet error code means the offering
// has no capacity now, which another offering may have.
func capacityError(code string) bool {
	switch code {
	case "InsufficientInstanceCapacity", "InsufficientCapacity", "MaxSpotInstanceCountExceeded",
		"UnfulfillableCapacity", "Unsupported", "InsufficientFreeAddressesInSubnet", "SpotMaxPriceTooLow":
		return true
	}
	return false
}

func zoneOfSubnet(subnets []awsv1.Subnet, id string) string {
	for _, s := range subnets {
		if s.ID == id {
			return s.Zone
		}
	}
	return ""
}

// launchTemplate returns the ID of the launch template for the class, AMI
// and max pods, creating it when missing. Its name is a hash of its
// content, so a changed class gets a new template and never edits one that
// instances are launching from.
func (p *Provider) launchTemplate(ctx context.Context, claim *karpv1.NodeClaim, class *awsv1.EC2NodeClass, ami *awsv1.AMI, maxPods int32) (string, error) {
	if ami == nil {
		return "", fmt.Errorf("EC2NodeClass %s has no AMI for the chosen instance types", class.Name)
	}
	data, err := p.templateData(claim, class, ami, maxPods)
	if err != nil {
		return "", err
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	name := fmt.Sprintf("nodewright/%s/%s", p.opts.ClusterName, hex.EncodeToString(sum[:12]))
	if id, ok := p.templates.Load(name); ok {
		return id.(string), nil
	}
	found, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	if err == nil && len(found.LaunchTemplates) > 0 {
		id := aws.ToString(found.LaunchTemplates[0].LaunchTemplateId)
		p.templates.Store(name, id)
		return id, nil
	}
	if err != nil && !isCode(err, "InvalidLaunchTemplateName.NotFoundException") {
		return "", fmt.Errorf("describing launch template %s: %w", name, err)
	}
	ltTags := ec2Tags(map[string]string{TagManagedBy: p.opts.ClusterName, TagNodeClass: class.Name, clusterTag(p.opts.ClusterName): "owned"})
	created, err := p.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ltTags}},
	})
	if isCode(err, "InvalidLaunchTemplateName.AlreadyExistsException") {
		p.templates.Delete(name)
		return p.launchTemplate(ctx, claim, class, ami, maxPods)
	}
	if err != nil {
		return "", fmt.Errorf("creating launch template %s: %w", name, err)
	}
	id := aws.ToString(created.LaunchTemplate.LaunchTemplateId)
	p.templates.Store(name, id)
	log.FromContext(ctx).Info("created launch template", "name", name, "id", id, "ami", ami.ID, "ec2nodeclass", class.Name)
	return id, nil
}

func isCode(err error, code string) bool {
	var apiErr smithy.APIError
	return err != nil && errors.As(err, &apiErr) && apiErr.ErrorCode() == code
}

// templateData is what every instance of the class, AMI and max pods
// launches with.
func (p *Provider) templateData(claim *karpv1.NodeClaim, class *awsv1.EC2NodeClass, ami *awsv1.AMI, maxPods int32) (*ec2types.RequestLaunchTemplateData, error) {
	family := class.AMIFamily()
	if family == "" {
		family = awsv1.AMIFamilyAL2023
	}
	custom := ""
	if class.Spec.UserData != nil {
		custom = *class.Spec.UserData
	}
	taints := append(append([]corev1.Taint{karpv1.UnregisteredNoExecuteTaint}, claim.Spec.Taints...), claim.Spec.StartupTaints...)
	ud, err := UserData(family, Bootstrap{
		ClusterName: p.opts.ClusterName, ClusterEndpoint: p.opts.ClusterEndpoint, CABundle: p.opts.CABundle,
		ClusterCIDR: p.opts.ClusterCIDR, Labels: kubeletLabels(claim), Taints: taints, Kubelet: class.Spec.Kubelet, MaxPods: maxPods,
	}, custom)
	if err != nil {
		return nil, fmt.Errorf("EC2NodeClass %s: %w", class.Name, err)
	}
	md := class.DeepCopy()
	awsv1.SetDefaults(md)
	m := md.Spec.MetadataOptions
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:  aws.String(ami.ID),
		UserData: aws.String(base64.StdEncoding.EncodeToString([]byte(ud))),
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(aws.ToString(m.HTTPEndpoint)),
			HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(aws.ToString(m.HTTPProtocolIPv6)),
			HttpPutResponseHopLimit: aws.Int32(int32(aws.ToInt64(m.HTTPPutResponseHopLimit))),
			HttpTokens:              ec2types.LaunchTemplateHttpTokensState(aws.ToString(m.HTTPTokens)),
		},
		BlockDeviceMappings: blockDevices(class, family),
		Monitoring:          &ec2types.LaunchTemplatesMonitoringRequest{Enabled: class.Spec.DetailedMonitoring},
	}
	if class.Status.InstanceProfile != "" {
		data.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(class.Status.InstanceProfile)}
	}
	groups := make([]string, len(class.Status.SecurityGroups))
	for i, g := range class.Status.SecurityGroups {
		groups[i] = g.ID
	}
	slices.Sort(groups)
	if class.Spec.AssociatePublicIPAddress != nil {
		// A public address is asked for on the primary interface, which then
		// carries the security groups.
		data.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: class.Spec.AssociatePublicIPAddress, Groups: groups}}
	} else {
		data.SecurityGroupIds = groups
	}
	return data, nil
}

// kubeletLabels are the claim's labels a kubelet may set on its own node:
// none in the kubernetes.io and k8s.io domains but those the node
// restriction admission allows.
func kubeletLabels(claim *karpv1.NodeClaim) map[string]string {
	allowed := map[string]bool{corev1.LabelArchStable: true, corev1.LabelOSStable: true, corev1.LabelInstanceTypeStable: true,
		corev1.LabelTopologyRegion: true, corev1.LabelTopologyZone: true}
	out := map[string]string{}
	for k, v := range claim.Labels {
		domain, _, ok := strings.Cut(k, "/")
		restricted := ok && (domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") || domain == "k8s.io" || strings.HasSuffix(domain, ".k8s.io"))
		if restricted && !allowed[k] && !strings.HasPrefix(k, "kubelet.kubernetes.io/") && !strings.HasPrefix(k, "node.kubernetes.io/") {
			continue
		}
		if k == corev1.LabelHostname {
			continue
		}
		out[k] = v
	}
	return out
}

// blockDevices are the class's block device mappings, or, when it lists
// none, the family's default volumes (encrypted gp3: 20Gi root for Linux,
// 50Gi for Windows, Bottlerocket's 4Gi OS and 20Gi data volumes); a custom
// family gets none, keeping the image's own.
func blockDevices(class *awsv1.EC2NodeClass, family string) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	mappings := class.Spec.BlockDeviceMappings
	if len(mappings) == 0 {
		if family == awsv1.AMIFamilyCustom {
			return nil
		}
		f := familyOf(family)
		gp3 := func(device string, gi int32) ec2types.LaunchTemplateBlockDeviceMappingRequest {
			return ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: aws.String(device),
				Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(gi),
					VolumeType: ec2types.VolumeTypeGp3, Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true)}}
		}
		data := gp3(f.ephemeralDevice, int32(f.ephemeralSize.Value()>>30))
		if family == awsv1.AMIFamilyBottlerocket {
			// Bottlerocket's OS volume is separate from its data volume.
			return []ec2types.LaunchTemplateBlockDeviceMappingRequest{gp3("/dev/xvda", 4), data}
		}
		return []ec2types.LaunchTemplateBlockDeviceMappingRequest{data}
	}
	var out []ec2types.LaunchTemplateBlockDeviceMappingRequest
	for _, m := range mappings {
		r := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: m.DeviceName}
		if e := m.EBS; e != nil {
			ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted,
				KmsKeyId: e.KMSKeyID, SnapshotId: e.SnapshotID}
			if e.IOPS != nil {
				ebs.Iops = aws.Int32(int32(*e.IOPS))
			}
			if e.Throughput != nil {
				ebs.Throughput = aws.Int32(int32(*e.Throughput))
			}
			if e.VolumeInitializationRate != nil {
				ebs.VolumeInitializationRate = e.VolumeInitializationRate
			}
			if e.VolumeSize != nil {
				gi := (e.VolumeSize.Value() + (1<<30 - 1)) >> 30
				ebs.VolumeSize = aws.Int32(int32(gi))
			}
			if e.VolumeType != nil {
				ebs.VolumeType = ec2types.VolumeType(*e.VolumeType)
			}
			r.Ebs = ebs
		}
		out = append(out, r)
	}
	return out
}

// claimFrom is claim as launched on inst: labels of its type, zone and
// capacity type, provider ID, image, capacity and allocatable, and the
// annotations drift reads.
func (p *Provider) claimFrom(claim *karpv1.NodeClaim, class *awsv1.EC2NodeClass, inst ec2types.Instance) *karpv1.NodeClaim {
	out := claim.DeepCopy()
	zone := aws.ToString(inst.Placement.AvailabilityZone)
	capacityType := karpv1.CapacityTypeOnDemand
	if inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		capacityType = karpv1.CapacityTypeSpot
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	var it *instancetype.InstanceType
	if types, err := p.shapesFor(class); err == nil {
		for _, t := range types {
			if t.Name == string(inst.InstanceType) {
				it = t
			}
		}
	}
	if it != nil {
		maps.Copy(out.Labels, it.Requirements.Labels())
		out.Status.Capacity = it.Capacity.DeepCopy()
		out.Status.Allocatable = it.Allocatable()
	}
	out.Labels[corev1.LabelInstanceTypeStable] = string(inst.InstanceType)
	out.Labels[corev1.LabelTopologyZone] = zone
	if id := zoneIDOf(class.Status.Subnets, zone); id != "" {
		out.Labels[LabelZoneID] = id
	}
	out.Labels[karpv1.CapacityTypeLabelKey] = capacityType
	out.Status.ProviderID = ProviderID(zone, aws.ToString(inst.InstanceId))
	out.Status.ImageID = aws.ToString(inst.ImageId)
	out.Annotations[AnnotationSubnet] = aws.ToString(inst.SubnetId)
	out.Annotations[AnnotationSecurityGroups] = joinIDs(class.Status.SecurityGroups, func(g awsv1.SecurityGroup) string { return g.ID })
	out.Annotations[AnnotationNodeClassHash] = NodeClassHash(class)
	return out
}

func zoneIDOf(subnets []awsv1.Subnet, zone string) string {
	for _, s := range subnets {
		if s.Zone == zone {
			return s.ZoneID
		}
	}
	return ""
}

// ProviderID is aws:///<zone>/<instance-id>, as the AWS cloud controller
// and kubelet write it.
func ProviderID(zone, instanceID string) string {
	return "aws:///" + zone + "/" + instanceID
}

// parseProviderID returns the instance ID of an AWS provider ID,
// aws:///<zone>/<instance-id> with both parts present.
func parseProviderID(id string) (string, error) {
	rest, ok := strings.CutPrefix(id, "aws:///")
	zone, inst, cut := strings.Cut(rest, "/")
	if !ok || !cut || zone == "" || !strings.HasPrefix(inst, "i-") || strings.Contains(inst, "/") {
		return "", fmt.Errorf("provider ID %q is not an AWS one (aws:///<zone>/<instance-id>)", id)
	}
	return inst, nil
}

// NodeClassHash is a hash of the class's fields that shape an instance
// other than through its selectors (whose results drift on their own):
// changing one drifts the class's nodes.
func NodeClassHash(class *awsv1.EC2NodeClass) string {
	spec := class.Spec.DeepCopy()
	spec.SubnetSelectorTerms, spec.SecurityGroupSelectorTerms, spec.AMISelectorTerms = nil, nil, nil
	spec.CapacityReservationSelectorTerms = nil
	raw, _ := json.Marshal(spec)
	sum := sha256.Sum256(raw)
	return strconv.FormatUint(uint64(sum[0])<<56|uint64(sum[1])<<48|uint64(sum[2])<<40|uint64(sum[3])<<32|
		uint64(sum[4])<<24|uint64(sum[5])<<16|uint64(sum[6])<<8|uint64(sum[7]), 10)
}

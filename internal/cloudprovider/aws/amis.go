package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
)

// aliasVariant is one image an alias stands for: the public SSM parameter
// that names it and the instance types it suits.
type aliasVariant struct {
	parameter    string
	requirements []corev1.NodeSelectorRequirement
}

func archReq(arch string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}
}

func keyReq(key string, op corev1.NodeSelectorOperator) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op}
}

// Requirements of the variants of the EKS-optimized images: the standard
// image is for types with no GPU or accelerator, the nvidia one for GPUs,
// the neuron one for Inferentia and Trainium.
var (
	standardReqs = []corev1.NodeSelectorRequirement{
		keyReq(awscatalog.LabelInstanceGPUCount, corev1.NodeSelectorOpDoesNotExist),
		keyReq(awscatalog.LabelInstanceAcceleratorCount, corev1.NodeSelectorOpDoesNotExist),
	}
	nvidiaReqs = []corev1.NodeSelectorRequirement{keyReq(awscatalog.LabelInstanceGPUCount, corev1.NodeSelectorOpExists)}
	neuronReqs = []corev1.NodeSelectorRequirement{keyReq(awscatalog.LabelInstanceAcceleratorCount, corev1.NodeSelectorOpExists)}
)

func variant(parameter, arch string, extra []corev1.NodeSelectorRequirement) aliasVariant {
	return aliasVariant{parameter: parameter, requirements: append([]corev1.NodeSelectorRequirement{archReq(arch)}, extra...)}
}

// aliasVariants are the SSM parameters an alias reads for a cluster of
// Kubernetes version k8s ("1.34"), as the EKS-optimized images publish them.
// A pinned version names a release; "latest" follows the newest.
func aliasVariants(a awsv1.Alias, k8s string) ([]aliasVariant, error) {
	latest := a.Version == awsv1.AliasVersionLatest
	switch awsv1.AMIFamilyFromAlias(a.Family) {
	case awsv1.AMIFamilyAL2023:
		var out []aliasVariant
		for _, v := range []struct {
			arch, label, kind string
			reqs              []corev1.NodeSelectorRequirement
		}{
			{"x86_64", "amd64", "standard", standardReqs}, {"x86_64", "amd64", "nvidia", nvidiaReqs}, {"x86_64", "amd64", "neuron", neuronReqs},
			{"arm64", "arm64", "standard", standardReqs}, {"arm64", "arm64", "nvidia", nvidiaReqs},
		} {
			release := "recommended"
			if !latest {
				release = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", v.arch, v.kind, k8s, a.Version)
			}
			out = append(out, variant(fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id", k8s, v.arch, v.kind, release), v.label, v.reqs))
		}
		return out, nil
	case awsv1.AMIFamilyAL2:
		var out []aliasVariant
		for _, v := range []struct {
			suffix, name, arch string
			reqs               []corev1.NodeSelectorRequirement
		}{{"", "", "amd64", standardReqs}, {"-gpu", "-gpu", "amd64", nvidiaReqs}, {"-gpu", "-gpu", "amd64", neuronReqs}, {"-arm64", "-arm64", "arm64", standardReqs}} {
			release := "recommended"
			if !latest {
				release = fmt.Sprintf("amazon-eks%s-node-%s-%s", v.name, k8s, a.Version)
			}
			out = append(out, variant(fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/%s/image_id", k8s, v.suffix, release), v.arch, v.reqs))
		}
		return out, nil
	case awsv1.AMIFamilyBottlerocket:
		release := "latest"
		if !latest {
			release = strings.TrimPrefix(a.Version, "v")
		}
		var out []aliasVariant
		for _, v := range []struct {
			suffix, arch, label string
			reqs                []corev1.NodeSelectorRequirement
		}{{"", "x86_64", "amd64", standardReqs}, {"", "arm64", "arm64", standardReqs}, {"-nvidia", "x86_64", "amd64", nvidiaReqs}, {"-nvidia", "arm64", "arm64", nvidiaReqs}} {
			out = append(out, variant(fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", k8s, v.suffix, v.arch, release), v.label, v.reqs))
		}
		return out, nil
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		year := strings.TrimPrefix(a.Family, "windows")
		return []aliasVariant{variant(fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", year, k8s), "amd64", nil)}, nil
	}
	return nil, fmt.Errorf("spec.amiSelectorTerms: alias family %q is not one of al2, al2023, bottlerocket, windows2019, windows2022, windows2025", a.Family)
}

// imageCandidate is an image a term found, with the requirements it brings.
type imageCandidate struct {
	image        ec2types.Image
	requirements []corev1.NodeSelectorRequirement // nil: from the image's architecture
}

// AMIs resolves the class's AMI selector terms for a cluster of Kubernetes
// version k8s ("1.34"): for each set of requirements (architecture, GPU or
// not), the newest image that is not deprecated, or the newest deprecated
// one when every match is. now decides deprecation.
func AMIs(ctx context.Context, ec2api EC2Images, ssmapi SSM, class *awsv1.EC2NodeClass, k8s string, now time.Time) ([]awsv1.AMI, error) {
	var cands []imageCandidate
	if alias, ok := class.Alias(); ok {
		variants, err := aliasVariants(alias, k8s)
		if err != nil {
			return nil, err
		}
		// One image may serve several variants (AL2's GPU image runs both
		// Nvidia and Neuron types), each with its requirements.
		ids := map[string][][]corev1.NodeSelectorRequirement{}
		var order []string
		values := map[string]string{}
		for _, v := range variants {
			id, ok := values[v.parameter]
			if !ok {
				var err error
				if id, err = parameter(ctx, ssmapi, v.parameter); err != nil {
					return nil, fmt.Errorf("spec.amiSelectorTerms alias %s@%s: %w", alias.Family, alias.Version, err)
				}
				values[v.parameter] = id
			}
			if id == "" {
				continue // this variant is not published for the version
			}
			if _, seen := ids[id]; !seen {
				order = append(order, id)
			}
			ids[id] = append(ids[id], v.requirements)
		}
		if len(order) == 0 {
			return nil, fmt.Errorf("spec.amiSelectorTerms alias %s@%s: no EKS-optimized image is published for Kubernetes %s", alias.Family, alias.Version, k8s)
		}
		images, err := describeImages(ctx, ec2api, &ec2.DescribeImagesInput{ImageIds: order, IncludeDeprecated: aws.Bool(true)})
		if err != nil {
			return nil, fmt.Errorf("spec.amiSelectorTerms alias %s@%s: %w", alias.Family, alias.Version, err)
		}
		for _, img := range images {
			for _, reqs := range ids[aws.ToString(img.ImageId)] {
				cands = append(cands, imageCandidate{image: img, requirements: reqs})
			}
		}
	} else {
		for i, term := range class.Spec.AMISelectorTerms {
			in, err := termQuery(ctx, ssmapi, term)
			if err != nil {
				return nil, fmt.Errorf("spec.amiSelectorTerms[%d]: %w", i, err)
			}
			images, err := describeImages(ctx, ec2api, in)
			if err != nil {
				return nil, fmt.Errorf("spec.amiSelectorTerms[%d]: %w", i, err)
			}
			for _, img := range images {
				cands = append(cands, imageCandidate{image: img})
			}
		}
	}
	return newestPerRequirements(cands, now), nil
}

// termQuery turns one non-alias term into a DescribeImages query.
func termQuery(ctx context.Context, ssmapi SSM, term awsv1.AMISelectorTerm) (*ec2.DescribeImagesInput, error) {
	// Deprecated images are asked for too: when every match is deprecated,
	// the newest of them is used rather than none.
	in := &ec2.DescribeImagesInput{Filters: tagFilters(term.Tags), IncludeDeprecated: aws.Bool(true)}
	id := term.ID
	if term.SSMParameter != "" {
		v, err := parameter(ctx, ssmapi, term.SSMParameter)
		if err != nil {
			return nil, err
		}
		if v == "" {
			return nil, fmt.Errorf("SSM parameter %s does not exist", term.SSMParameter)
		}
		id = v
	}
	if id != "" {
		in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("image-id"), Values: []string{id}})
	}
	if term.Name != "" {
		in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{term.Name}})
	}
	switch {
	case term.Owner != "":
		in.Owners = []string{term.Owner}
	case term.Name != "":
		// A name alone could match anyone's public image.
		in.Owners = []string{"self", "amazon"}
	}
	return in, nil
}

// parameter reads an SSM parameter; "" when it does not exist.
func parameter(ctx context.Context, api SSM, name string) (string, error) {
	out, err := api.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		var nf *ssmtypes.ParameterNotFound
		if errors.As(err, &nf) {
			return "", nil
		}
		return "", fmt.Errorf("reading SSM parameter %s: %w", name, err)
	}
	if out.Parameter == nil {
		return "", nil
	}
	return aws.ToString(out.Parameter.Value), nil
}

func describeImages(ctx context.Context, api EC2Images, in *ec2.DescribeImagesInput) ([]ec2types.Image, error) {
	var out []ec2types.Image
	pages := ec2.NewDescribeImagesPaginator(api, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing images: %w", err)
		}
		out = append(out, page.Images...)
	}
	return out, nil
}

// newestPerRequirements keeps, for each distinct set of requirements, the
// newest image not deprecated at now (or the newest, when all are), sorted
// newest first. Ties in creation date go to the later name, then ID.
func newestPerRequirements(cands []imageCandidate, now time.Time) []awsv1.AMI {
	type pick struct {
		ami     awsv1.AMI
		created string
	}
	best := map[string]pick{}
	better := func(a, b pick) bool { // a better than b
		if a.ami.Deprecated != b.ami.Deprecated {
			return !a.ami.Deprecated
		}
		if a.created != b.created {
			return a.created > b.created
		}
		if a.ami.Name != b.ami.Name {
			return a.ami.Name > b.ami.Name
		}
		return a.ami.ID > b.ami.ID
	}
	for _, c := range cands {
		if c.image.State != "" && c.image.State != ec2types.ImageStateAvailable {
			continue
		}
		reqs := c.requirements
		if reqs == nil {
			reqs = []corev1.NodeSelectorRequirement{archReq(archLabel(c.image.Architecture))}
		}
		p := pick{ami: awsv1.AMI{ID: aws.ToString(c.image.ImageId), Name: aws.ToString(c.image.Name),
			Deprecated: deprecated(c.image, now), Requirements: reqs}, created: aws.ToString(c.image.CreationDate)}
		key := requirementsKey(reqs)
		if cur, ok := best[key]; !ok || better(p, cur) {
			best[key] = p
		}
	}
	picks := make([]pick, 0, len(best))
	for _, p := range best {
		picks = append(picks, p)
	}
	sort.Slice(picks, func(i, j int) bool { return better(picks[i], picks[j]) })
	out := make([]awsv1.AMI, len(picks))
	for i, p := range picks {
		out[i] = p.ami
	}
	return out
}

func archLabel(a ec2types.ArchitectureValues) string {
	switch a {
	case ec2types.ArchitectureValuesArm64, ec2types.ArchitectureValuesArm64Mac:
		return "arm64"
	}
	return "amd64"
}

func deprecated(img ec2types.Image, now time.Time) bool {
	t, err := time.Parse(time.RFC3339, aws.ToString(img.DeprecationTime))
	return err == nil && !t.After(now)
}

func requirementsKey(reqs []corev1.NodeSelectorRequirement) string {
	parts := make([]string, len(reqs))
	for i, r := range reqs {
		parts[i] = r.Key + " " + string(r.Operator) + " " + strings.Join(slices.Sorted(slices.Values(r.Values)), ",")
	}
	slices.Sort(parts)
	return strings.Join(parts, ";")
}

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
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
)

// ssmFake answers GetParameter from a map; other names are
// ParameterNotFound, as SSM answers them.
type ssmFake struct {
	params map[string]string
	err    error // returned for every call when set
	asked  []string
}

func (f *ssmFake) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	name := aws.ToString(in.Name)
	f.asked = append(f.asked, name)
	if f.err != nil {
		return nil, f.err
	}
	v, ok := f.params[name]
	if !ok {
		return nil, &ssmtypes.ParameterNotFound{Message: aws.String("parameter " + name + " not found")}
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Name: in.Name, Value: aws.String(v)}}, nil
}

// imagesFake is an EC2Images that records its inputs and answers the
// images asked for by ID, or the i-th canned list for a filtered query.
type imagesFake struct {
	byID     map[string]ec2types.Image
	filtered [][]ec2types.Image
	errs     map[int]error // by call index
	calls    []*ec2.DescribeImagesInput
}

func (f *imagesFake) DescribeImages(_ context.Context, in *ec2.DescribeImagesInput, _ ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error) {
	i := len(f.calls)
	f.calls = append(f.calls, in)
	if err := f.errs[i]; err != nil {
		return nil, err
	}
	out := &ec2.DescribeImagesOutput{}
	if len(in.ImageIds) > 0 {
		for _, id := range in.ImageIds {
			if img, ok := f.byID[id]; ok {
				out.Images = append(out.Images, img)
			}
		}
		return out, nil
	}
	if i < len(f.filtered) {
		out.Images = f.filtered[i]
	}
	return out, nil
}

func image(id, name, created string, arch ec2types.ArchitectureValues) ec2types.Image {
	return ec2types.Image{ImageId: aws.String(id), Name: aws.String(name), CreationDate: aws.String(created),
		Architecture: arch, State: ec2types.ImageStateAvailable}
}

func deprecatedAt(img ec2types.Image, when string) ec2types.Image {
	img.DeprecationTime = aws.String(when)
	return img
}

func withState(img ec2types.Image, s ec2types.ImageState) ec2types.Image {
	img.State = s
	return img
}

func TestAliasVariantParameters(t *testing.T) {
	const opt = "/aws/service/eks/optimized-ami/1.30/"
	for _, tc := range []struct {
		alias awsv1.Alias
		want  []string
		arch  []string
	}{
		{awsv1.Alias{Family: "al2023", Version: "latest"}, []string{
			opt + "amazon-linux-2023/x86_64/standard/recommended/image_id",
			opt + "amazon-linux-2023/x86_64/nvidia/recommended/image_id",
			opt + "amazon-linux-2023/x86_64/neuron/recommended/image_id",
			opt + "amazon-linux-2023/arm64/standard/recommended/image_id",
			opt + "amazon-linux-2023/arm64/nvidia/recommended/image_id",
		}, []string{"amd64", "amd64", "amd64", "arm64", "arm64"}},
		{awsv1.Alias{Family: "al2023", Version: "v20240807"}, []string{
			opt + "amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.30-v20240807/image_id",
			opt + "amazon-linux-2023/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-1.30-v20240807/image_id",
			opt + "amazon-linux-2023/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.30-v20240807/image_id",
			opt + "amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.30-v20240807/image_id",
			opt + "amazon-linux-2023/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.30-v20240807/image_id",
		}, []string{"amd64", "amd64", "amd64", "arm64", "arm64"}},
		{awsv1.Alias{Family: "al2", Version: "latest"}, []string{
			opt + "amazon-linux-2/recommended/image_id",
			opt + "amazon-linux-2-gpu/recommended/image_id",
			opt + "amazon-linux-2-gpu/recommended/image_id", // Neuron types run the GPU image too
			opt + "amazon-linux-2-arm64/recommended/image_id",
		}, []string{"amd64", "amd64", "amd64", "arm64"}},
		{awsv1.Alias{Family: "al2", Version: "v20240807"}, []string{
			opt + "amazon-linux-2/amazon-eks-node-1.30-v20240807/image_id",
			opt + "amazon-linux-2-gpu/amazon-eks-gpu-node-1.30-v20240807/image_id",
			opt + "amazon-linux-2-gpu/amazon-eks-gpu-node-1.30-v20240807/image_id",
			opt + "amazon-linux-2-arm64/amazon-eks-arm64-node-1.30-v20240807/image_id",
		}, []string{"amd64", "amd64", "amd64", "arm64"}},
		{awsv1.Alias{Family: "bottlerocket", Version: "v1.20.0"}, []string{
			"/aws/service/bottlerocket/aws-k8s-1.30/x86_64/1.20.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.30/arm64/1.20.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.30-nvidia/x86_64/1.20.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.30-nvidia/arm64/1.20.0/image_id",
		}, []string{"amd64", "arm64", "amd64", "arm64"}},
		{awsv1.Alias{Family: "bottlerocket", Version: "latest"}, []string{
			"/aws/service/bottlerocket/aws-k8s-1.30/x86_64/latest/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.30/arm64/latest/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.30-nvidia/x86_64/latest/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.30-nvidia/arm64/latest/image_id",
		}, []string{"amd64", "arm64", "amd64", "arm64"}},
		{awsv1.Alias{Family: "windows2022", Version: "latest"}, []string{
			"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.30/image_id",
		}, []string{"amd64"}},
	} {
		t.Run(tc.alias.Family+"@"+tc.alias.Version, func(t *testing.T) {
			got, err := aliasVariants(tc.alias, "1.30")
			if err != nil {
				t.Fatal(err)
			}
			var params, arch []string
			for _, v := range got {
				params = append(params, v.parameter)
				if v.requirements[0].Key != corev1.LabelArchStable {
					t.Errorf("%s: first requirement %v is not the architecture", v.parameter, v.requirements[0])
				}
				arch = append(arch, v.requirements[0].Values...)
			}
			if !reflect.DeepEqual(params, tc.want) {
				t.Errorf("parameters\n%s\nwant\n%s", strings.Join(params, "\n"), strings.Join(tc.want, "\n"))
			}
			if !reflect.DeepEqual(arch, tc.arch) {
				t.Errorf("architectures %v, want %v", arch, tc.arch)
			}
		})
	}
	t.Run("unknown family", func(t *testing.T) {
		_, err := aliasVariants(awsv1.Alias{Family: "ubuntu", Version: "latest"}, "1.30")
		if err == nil || !strings.Contains(err.Error(), `"ubuntu"`) {
			t.Errorf("error %v must name the family", err)
		}
	})
}

// TestAliasVariantsSplitByAccelerator checks that the standard image is for
// types without GPU or accelerator, nvidia for GPUs, neuron for
// accelerators.
func TestAliasVariantsSplitByAccelerator(t *testing.T) {
	got, err := aliasVariants(awsv1.Alias{Family: "al2023", Version: "latest"}, "1.30")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // requirementsKey: sorted "key op values" joined by ";"
		"standard": "karpenter.k8s.aws/instance-accelerator-count DoesNotExist ;karpenter.k8s.aws/instance-gpu-count DoesNotExist ;kubernetes.io/arch In amd64",
		"nvidia":   "karpenter.k8s.aws/instance-gpu-count Exists ;kubernetes.io/arch In amd64",
		"neuron":   "karpenter.k8s.aws/instance-accelerator-count Exists ;kubernetes.io/arch In amd64",
	}
	for _, v := range got[:3] {
		kind := strings.Split(v.parameter, "/")[8]
		if key := requirementsKey(v.requirements); key != want[kind] {
			t.Errorf("%s: requirements %q, want %q", kind, key, want[kind])
		}
	}
}

const (
	stdAMD64   = "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id"
	nvidiaAMD6 = "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/nvidia/recommended/image_id"
	stdARM64   = "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/arm64/standard/recommended/image_id"
)

func aliasClass(alias string) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: alias}}}}
}

func TestAMIsByAliasSkipUnpublishedVariants(t *testing.T) {
	now := time.Date(2024, 9, 1, 0, 0, 0, 0, time.UTC)
	ssmapi := &ssmFake{params: map[string]string{stdAMD64: "ami-std", nvidiaAMD6: "ami-gpu", stdARM64: "ami-arm"}}
	images := &imagesFake{byID: map[string]ec2types.Image{
		"ami-std": image("ami-std", "al2023-std", "2024-08-03T00:00:00.000Z", ec2types.ArchitectureValuesX8664),
		"ami-gpu": image("ami-gpu", "al2023-gpu", "2024-08-02T00:00:00.000Z", ec2types.ArchitectureValuesX8664),
		"ami-arm": image("ami-arm", "al2023-arm", "2024-08-01T00:00:00.000Z", ec2types.ArchitectureValuesArm64),
	}}
	got, err := AMIs(context.Background(), images, ssmapi, aliasClass("al2023@latest"), "1.30", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(ssmapi.asked) != 5 {
		t.Errorf("asked SSM for %d parameters, want the 5 variants", len(ssmapi.asked))
	}
	if len(images.calls) != 1 || !reflect.DeepEqual(images.calls[0].ImageIds, []string{"ami-std", "ami-gpu", "ami-arm"}) {
		t.Fatalf("DescribeImages calls %d; want one for the published images in variant order", len(images.calls))
	}
	var ids []string
	for _, a := range got {
		ids = append(ids, a.ID)
	}
	if !reflect.DeepEqual(ids, []string{"ami-std", "ami-gpu", "ami-arm"}) {
		t.Errorf("AMIs %v, want newest first [ami-std ami-gpu ami-arm]", ids)
	}
	if len(got) == 3 {
		if r := requirementsKey(got[1].Requirements); !strings.Contains(r, awscatalog.LabelInstanceGPUCount+" Exists") {
			t.Errorf("ami-gpu requirements %q, want the nvidia variant's", r)
		}
		if r := requirementsKey(got[2].Requirements); !strings.Contains(r, "kubernetes.io/arch In arm64") {
			t.Errorf("ami-arm requirements %q, want arm64", r)
		}
	}
}

func TestAMIsByAliasErrors(t *testing.T) {
	now := time.Date(2024, 9, 1, 0, 0, 0, 0, time.UTC)
	t.Run("nothing published", func(t *testing.T) {
		_, err := AMIs(context.Background(), &imagesFake{}, &ssmFake{}, aliasClass("al2023@v20990101"), "1.30", now)
		if err == nil || !strings.Contains(err.Error(), "no EKS-optimized image is published for Kubernetes 1.30") {
			t.Errorf("error %v must say no image is published for 1.30", err)
		}
	})
	t.Run("SSM fails", func(t *testing.T) {
		boom := errors.New("AccessDenied")
		_, err := AMIs(context.Background(), &imagesFake{}, &ssmFake{err: boom}, aliasClass("al2023@latest"), "1.30", now)
		if err == nil || !errors.Is(err, boom) || !strings.Contains(err.Error(), "alias al2023@latest") {
			t.Errorf("error %v must wrap SSM's and name the alias", err)
		}
	})
	t.Run("unknown family", func(t *testing.T) {
		if _, err := AMIs(context.Background(), &imagesFake{}, &ssmFake{}, aliasClass("ubuntu@latest"), "1.30", now); err == nil {
			t.Error("an unknown alias family resolved")
		}
	})
}

func TestAMIsByTermsUnionTheTerms(t *testing.T) {
	now := time.Date(2024, 9, 1, 0, 0, 0, 0, time.UTC)
	images := &imagesFake{filtered: [][]ec2types.Image{
		{image("ami-1", "a", "2024-01-01T00:00:00.000Z", ec2types.ArchitectureValuesX8664)},
		{image("ami-2", "b", "2024-02-01T00:00:00.000Z", ec2types.ArchitectureValuesArm64)},
	}}
	class := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{
		{Tags: map[string]string{"team": "a"}}, {Name: "b"},
	}}}
	got, err := AMIs(context.Background(), images, &ssmFake{}, class, "1.30", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "ami-2" || got[1].ID != "ami-1" {
		t.Errorf("AMIs %+v, want ami-2 (arm64) then ami-1 (amd64)", got)
	}
	t.Run("error names the term", func(t *testing.T) {
		images := &imagesFake{errs: map[int]error{1: errors.New("throttled")}}
		_, err := AMIs(context.Background(), images, &ssmFake{}, class, "1.30", now)
		if err == nil || !strings.Contains(err.Error(), "spec.amiSelectorTerms[1]") {
			t.Errorf("error %v must name spec.amiSelectorTerms[1]", err)
		}
	})
}

func TestNewestPerRequirements(t *testing.T) {
	now := time.Date(2024, 9, 1, 0, 0, 0, 0, time.UTC)
	const (
		amd = ec2types.ArchitectureValuesX8664
		arm = ec2types.ArchitectureValuesArm64
	)
	past, future := "2024-08-01T00:00:00.000Z", "2025-01-01T00:00:00Z"
	type want struct {
		id         string
		deprecated bool
	}
	for _, tc := range []struct {
		name  string
		cands []ec2types.Image
		want  []want
	}{
		{"newest wins", []ec2types.Image{
			image("ami-old", "x", "2024-01-01T00:00:00.000Z", amd),
			image("ami-new", "x", "2024-06-01T00:00:00.000Z", amd),
		}, []want{{"ami-new", false}}},
		{"newest not deprecated beats newer deprecated", []ec2types.Image{
			image("ami-old", "x", "2024-01-01T00:00:00.000Z", amd),
			deprecatedAt(image("ami-new", "x", "2024-06-01T00:00:00.000Z", amd), past),
		}, []want{{"ami-old", false}}},
		{"deprecation in the future does not count", []ec2types.Image{
			image("ami-old", "x", "2024-01-01T00:00:00.000Z", amd),
			deprecatedAt(image("ami-new", "x", "2024-06-01T00:00:00.000Z", amd), future),
		}, []want{{"ami-new", false}}},
		{"all deprecated: newest, marked", []ec2types.Image{
			deprecatedAt(image("ami-old", "x", "2024-01-01T00:00:00.000Z", amd), past),
			deprecatedAt(image("ami-new", "x", "2024-06-01T00:00:00.000Z", amd), past),
		}, []want{{"ami-new", true}}},
		{"tie goes to the later name", []ec2types.Image{
			image("ami-2", "name-a", "2024-06-01T00:00:00.000Z", amd),
			image("ami-1", "name-b", "2024-06-01T00:00:00.000Z", amd),
		}, []want{{"ami-1", false}}},
		{"tie of name goes to the later ID", []ec2types.Image{
			image("ami-2", "same", "2024-06-01T00:00:00.000Z", amd),
			image("ami-1", "same", "2024-06-01T00:00:00.000Z", amd),
		}, []want{{"ami-2", false}}},
		{"images not available are skipped", []ec2types.Image{
			image("ami-old", "x", "2024-01-01T00:00:00.000Z", amd),
			withState(image("ami-pending", "x", "2024-06-01T00:00:00.000Z", amd), ec2types.ImageStatePending),
			withState(image("ami-failed", "x", "2024-07-01T00:00:00.000Z", amd), ec2types.ImageStateFailed),
		}, []want{{"ami-old", false}}},
		{"one per architecture, newest first", []ec2types.Image{
			image("ami-amd-old", "x", "2024-01-01T00:00:00.000Z", amd),
			image("ami-arm", "x", "2024-03-01T00:00:00.000Z", arm),
			image("ami-amd", "x", "2024-02-01T00:00:00.000Z", amd),
		}, []want{{"ami-arm", false}, {"ami-amd", false}}},
		{"deprecated sorts after current across sets", []ec2types.Image{
			deprecatedAt(image("ami-arm", "x", "2024-06-01T00:00:00.000Z", arm), past),
			image("ami-amd", "x", "2024-01-01T00:00:00.000Z", amd),
		}, []want{{"ami-amd", false}, {"ami-arm", true}}},
		{"none", nil, []want{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cands []imageCandidate
			for _, img := range tc.cands {
				cands = append(cands, imageCandidate{image: img})
			}
			got := []want{}
			for _, a := range newestPerRequirements(cands, now) {
				got = append(got, want{a.ID, a.Deprecated})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestNewestPerRequirementsKeysBySet checks that requirements are one set
// whatever the order of their entries and values.
func TestNewestPerRequirementsKeysBySet(t *testing.T) {
	now := time.Date(2024, 9, 1, 0, 0, 0, 0, time.UTC)
	a := []corev1.NodeSelectorRequirement{{Key: "k", Operator: corev1.NodeSelectorOpIn, Values: []string{"1", "2"}}, archReq("amd64")}
	b := []corev1.NodeSelectorRequirement{archReq("amd64"), {Key: "k", Operator: corev1.NodeSelectorOpIn, Values: []string{"2", "1"}}}
	got := newestPerRequirements([]imageCandidate{
		{image: image("ami-1", "x", "2024-01-01T00:00:00.000Z", ec2types.ArchitectureValuesX8664), requirements: a},
		{image: image("ami-2", "x", "2024-02-01T00:00:00.000Z", ec2types.ArchitectureValuesX8664), requirements: b},
	}, now)
	if len(got) != 1 || got[0].ID != "ami-2" {
		t.Errorf("got %+v, want only ami-2", got)
	}
}

func TestTermQuery(t *testing.T) {
	ssmapi := &ssmFake{params: map[string]string{"/my/ami": "ami-from-ssm"}}
	for _, tc := range []struct {
		name    string
		term    awsv1.AMISelectorTerm
		filters []string
		owners  []string
		err     string
	}{
		{name: "name alone is owned by self or amazon", term: awsv1.AMISelectorTerm{Name: "my-ami-*"},
			filters: []string{"name=my-ami-*"}, owners: []string{"self", "amazon"}},
		{name: "name and owner", term: awsv1.AMISelectorTerm{Name: "my-ami-*", Owner: "123456789012"},
			filters: []string{"name=my-ami-*"}, owners: []string{"123456789012"}},
		{name: "owner alone", term: awsv1.AMISelectorTerm{Owner: "self", Tags: map[string]string{"a": "b"}},
			filters: []string{"tag:a=b"}, owners: []string{"self"}},
		{name: "id and tags", term: awsv1.AMISelectorTerm{ID: "ami-1", Tags: map[string]string{"team": "*"}},
			filters: []string{"tag-key=team", "image-id=ami-1"}},
		{name: "ssm parameter", term: awsv1.AMISelectorTerm{SSMParameter: "/my/ami"},
			filters: []string{"image-id=ami-from-ssm"}},
		{name: "missing ssm parameter", term: awsv1.AMISelectorTerm{SSMParameter: "/not/there"}, err: "SSM parameter /not/there does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := termQuery(context.Background(), ssmapi, tc.term)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f := filterStrings(in.Filters); !reflect.DeepEqual(f, tc.filters) {
				t.Errorf("filters %v, want %v", f, tc.filters)
			}
			if !reflect.DeepEqual(in.Owners, tc.owners) {
				t.Errorf("owners %v, want %v", in.Owners, tc.owners)
			}
		})
	}
	t.Run("ssm error", func(t *testing.T) {
		boom := errors.New("AccessDenied")
		_, err := termQuery(context.Background(), &ssmFake{err: boom}, awsv1.AMISelectorTerm{SSMParameter: "/my/ami"})
		if !errors.Is(err, boom) {
			t.Errorf("error %v must wrap SSM's", err)
		}
	})
}

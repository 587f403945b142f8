package livetest

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	awsprovider "github.com/nodewright/nodewright/internal/cloudprovider/aws"
	"github.com/nodewright/nodewright/internal/controller/ec2nodeclass"
	"github.com/nodewright/nodewright/internal/testaws"
	"github.com/nodewright/nodewright/internal/testcluster"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

const (
	clusterName = "live"
	k8sVersion  = testaws.KubernetesVersion
	discovery   = testaws.DiscoveryTag
)

func al2023Parameter(arch string) string { return testaws.AL2023Parameter(arch) }

// env is one test's AWS account in moto (testaws.Account) with the
// provider and the EC2NodeClass controller on it.
type env struct {
	front    *testaws.Front
	ec2      *ec2.Client
	subnets  map[string]string // zone -> tagged subnet
	untagged string
	group    string
	images   map[string][]string // arch -> image IDs
	provider *awsprovider.Provider
	ctrl     *ec2nodeclass.Controller
}

func newEnv(t *testing.T) *env {
	t.Helper()
	moto := testaws.Start(t)
	front := testaws.NewFront(t, moto)
	cfg := front.Config()
	acct := testaws.NewAccount(t, front, clusterName)
	e := &env{front: front, ec2: ec2.NewFromConfig(cfg), subnets: acct.Subnets, untagged: acct.Untagged, group: acct.Group, images: acct.Images}
	var err error
	e.provider, err = awsprovider.NewProvider(cluster.Client, e.ec2, awsprovider.ProviderOptions{
		ClusterName: clusterName, ClusterEndpoint: "https://127.0.0.1:6443", CABundle: []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
		ClusterCIDR: "10.100.0.0/16", Region: testaws.Region, VMMemoryOverheadPercent: 0.075,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.ctrl = &ec2nodeclass.Controller{Client: cluster.Client, Recorder: record.NewFakeRecorder(100),
		Resolver: &awsprovider.Resolver{EC2: e.ec2, SSM: ssm.NewFromConfig(cfg), IAM: iam.NewFromConfig(cfg),
			ClusterName: clusterName, Region: testaws.Region, KubernetesVersion: k8sVersion}}
	return e
}

// class creates an EC2NodeClass selecting the tagged subnets and group,
// al2023@latest and the test role, changed by edit, and removes it (and its
// finalizer) when the test ends.
func (e *env) class(t *testing.T, name string, edit func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	t.Helper()
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{discovery: clusterName}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{discovery: clusterName}}},
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		Role:                       "KarpenterNodeRole-live",
		Tags:                       map[string]string{"team": "platform"},
	}}
	if edit != nil {
		edit(nc)
	}
	if err := cluster.Client.Create(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		got := &awsv1.EC2NodeClass{}
		if cluster.Client.Get(ctx, client.ObjectKeyFromObject(nc), got) == nil {
			got.Finalizers = nil
			_ = cluster.Client.Update(ctx, got)
			_ = cluster.Client.Delete(ctx, got)
		}
	})
	return nc
}

// reconcile runs the EC2NodeClass controller once and returns the class.
func (e *env) reconcile(t *testing.T, name string) *awsv1.EC2NodeClass {
	t.Helper()
	ctx := context.Background()
	if _, err := e.ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
		t.Fatalf("reconciling EC2NodeClass %s: %v", name, err)
	}
	// The provider reads through the same client; wait until it sees the write.
	got := &awsv1.EC2NodeClass{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
		t.Fatal(err)
	}
	return got
}

// claim creates a NodeClaim of nodePool for class asking for cpu with
// extra requirements, and removes it when the test ends.
func claim(t *testing.T, name, class, cpu string, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	t.Helper()
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "default", "team": "platform"}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: class},
			Requirements: append([]karpv1.NodeSelectorRequirementWithMinValues{
				req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand),
			}, reqs...),
			Resources: karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: mustQuantity(cpu)}},
		},
	}
	if err := cluster.Client.Create(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), nc) })
	return nc
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

func deadline() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

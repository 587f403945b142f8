package operator

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nodewright/nodewright/internal/metrics"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsprovider "github.com/nodewright/nodewright/internal/cloudprovider/aws"
	"github.com/nodewright/nodewright/internal/controller/ec2nodeclass"
	"github.com/nodewright/nodewright/internal/controller/interruption"
)

// AWSOptions are the AWS provider's settings, named as Karpenter names them.
// The region and credentials come from the AWS SDK's standard chain
// (AWS_REGION, IRSA, EKS Pod Identity, instance metadata); endpoints may be
// overridden per service with the SDK's AWS_ENDPOINT_URL_<SERVICE>
// variables, or for all with AWS_ENDPOINT_URL.
type AWSOptions struct {
	ClusterName     string
	ClusterEndpoint string
	// ClusterCABundle is the cluster CA (PEM, or base64 of it); empty takes
	// the controller's own kubeconfig CA, or EKS DescribeCluster's.
	ClusterCABundle string
	// ClusterCIDR is the service CIDR; empty asks EKS DescribeCluster.
	ClusterCIDR string
	IsolatedVPC bool
	// InterruptionQueue is the SQS queue of EventBridge events; empty
	// handles no interruptions.
	InterruptionQueue       string
	VMMemoryOverheadPercent float64
	ReservedENIs            int
	// NodeClassInterval is how often each EC2NodeClass is resolved again.
	NodeClassInterval time.Duration
	// KubernetesVersion ("1.34") chooses the images AMI aliases name; empty
	// asks the API server.
	KubernetesVersion string
}

// awsParts are the AWS provider and what runs beside it.
type awsParts struct {
	provider  *awsprovider.Provider
	nodeClass *ec2nodeclass.Controller
	refresher *awsprovider.Refresher
	// interruption is nil without --interruption-queue.
	interruption *interruption.Controller
}

// newAWSProvider builds the AWS provider from the SDK's configuration.
func newAWSProvider(ctx context.Context, mgr manager.Manager, cfg *rest.Config, o AWSOptions) (*awsParts, error) {
	if o.ClusterName == "" {
		return nil, fmt.Errorf("--cluster-name is required with --cloud-provider=aws")
	}
	sdk, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if sdk.Region == "" {
		return nil, fmt.Errorf("no AWS region: set AWS_REGION (on EKS, IRSA and Pod Identity set it)")
	}
	endpoint, ca := o.ClusterEndpoint, []byte(nil)
	if o.ClusterCABundle != "" {
		ca = []byte(o.ClusterCABundle)
		if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(o.ClusterCABundle)); err == nil {
			ca = dec
		}
	} else if len(cfg.CAData) > 0 {
		ca = cfg.CAData
	} else if cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("reading the cluster CA %s: %w", cfg.CAFile, err)
		}
	}
	cidr := o.ClusterCIDR
	if endpoint == "" || len(ca) == 0 || cidr == "" {
		var api awsprovider.EKS = eks.NewFromConfig(sdk)
		out, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(o.ClusterName)})
		if err != nil {
			return nil, fmt.Errorf("--cluster-endpoint, the cluster CA or --cluster-cidr not given, and EKS DescribeCluster %s failed: %w", o.ClusterName, err)
		}
		if endpoint == "" {
			endpoint = aws.ToString(out.Cluster.Endpoint)
		}
		if len(ca) == 0 && out.Cluster.CertificateAuthority != nil {
			ca, _ = base64.StdEncoding.DecodeString(aws.ToString(out.Cluster.CertificateAuthority.Data))
		}
		if n := out.Cluster.KubernetesNetworkConfig; cidr == "" && n != nil {
			cidr = aws.ToString(n.ServiceIpv4Cidr)
			if cidr == "" {
				cidr = aws.ToString(n.ServiceIpv6Cidr)
			}
		}
	}
	version := o.KubernetesVersion
	if version == "" {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return nil, err
		}
		v, err := dc.ServerVersion()
		if err != nil {
			return nil, fmt.Errorf("asking the API server its version (for AMI aliases): %w", err)
		}
		version = v.Major + "." + strings.TrimSuffix(v.Minor, "+")
	}
	ec2api := ec2.NewFromConfig(sdk)
	provider, err := awsprovider.NewProvider(metrics.CountWrites(mgr.GetClient(), "aws-provider"), ec2api, awsprovider.ProviderOptions{
		ClusterName: o.ClusterName, ClusterEndpoint: endpoint, CABundle: ca, ClusterCIDR: cidr, Region: sdk.Region,
		IsolatedVPC: o.IsolatedVPC, VMMemoryOverheadPercent: o.VMMemoryOverheadPercent, ReservedENIs: o.ReservedENIs,
	})
	if err != nil {
		return nil, err
	}
	refresher := &awsprovider.Refresher{Provider: provider, EC2: ec2api, Spot: ec2api, Region: sdk.Region}
	if !o.IsolatedVPC {
		// The Price List API answers in us-east-1 for every commercial region.
		pcfg := sdk.Copy()
		pcfg.Region = "us-east-1"
		refresher.Pricing = pricing.NewFromConfig(pcfg)
	}
	resolver := &awsprovider.Resolver{PriceStatus: refresher.PriceStatus, EC2: ec2api, SSM: ssm.NewFromConfig(sdk), IAM: iam.NewFromConfig(sdk),
		ClusterName: o.ClusterName, Region: sdk.Region, KubernetesVersion: version}
	log.FromContext(ctx).Info("AWS provider", "region", sdk.Region, "cluster", o.ClusterName, "clusterEndpoint", endpoint,
		"kubernetesVersion", version)
	parts := &awsParts{provider: provider, refresher: refresher,
		nodeClass: &ec2nodeclass.Controller{Client: metrics.CountWrites(mgr.GetClient(), "ec2nodeclass"), Resolver: resolver,
			Recorder: mgr.GetEventRecorderFor("nodewright"), Interval: o.NodeClassInterval}}
	if o.InterruptionQueue != "" {
		parts.interruption = &interruption.Controller{Client: metrics.CountWrites(mgr.GetClient(), "interruption"),
			Source:   &awsprovider.QueueSource{SQS: sqs.NewFromConfig(sdk), Queue: o.InterruptionQueue},
			Recorder: mgr.GetEventRecorderFor("nodewright"), Unavailable: provider.MarkUnavailable}
	}
	return parts, nil
}

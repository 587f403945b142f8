package aws

import (
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// Tags on what the provider creates, as Karpenter writes them.
const (
	TagNodePool  = karpv1.NodePoolLabelKey // karpenter.sh/nodepool
	TagNodeClaim = "karpenter.sh/nodeclaim"
	TagNodeClass = "karpenter.k8s.aws/ec2nodeclass"
	// TagEKSCluster names the cluster for EKS's console and billing.
	TagEKSCluster = "eks:eks-cluster-name"
	// TagManagedBy on a launch template names the cluster whose controller
	// made it, so that only ours are ever deleted.
	TagManagedBy = "karpenter.k8s.aws/cluster"
)

// clusterTag is kubernetes.io/cluster/<name>, "owned" on what we launch.
func clusterTag(cluster string) string { return "kubernetes.io/cluster/" + cluster }

// InstanceTags are the tags of an instance launched for a NodeClaim: the
// class's own, then ours, which a class may not override.
func InstanceTags(cluster string, class *awsv1.EC2NodeClass, nodePool, nodeClaim string) map[string]string {
	out := map[string]string{}
	if class != nil {
		maps.Copy(out, class.Spec.Tags)
	}
	out[clusterTag(cluster)] = "owned"
	out[TagEKSCluster] = cluster
	out[TagNodePool] = nodePool
	out[TagNodeClaim] = nodeClaim
	if class != nil {
		out[TagNodeClass] = class.Name
	}
	if _, ok := out["Name"]; !ok {
		out["Name"] = nodeClaim
	}
	return out
}

func ec2Tags(m map[string]string) []ec2types.Tag {
	out := make([]ec2types.Tag, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func tagMap(tags []ec2types.Tag) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

// Package aws is nodewright's AWS provider. This part is pure: it turns the
// instance-type catalog of one region (internal/cloudprovider/aws/catalog)
// into node shapes as Karpenter's AWS provider computes them for an
// EC2NodeClass: requirements from the karpenter.k8s.aws labels, capacity
// (vCPUs, memory less the Graviton CMA reserve, ENI-limited or configured
// max pods, ephemeral storage from the block devices or RAID0 instance
// store, GPUs and accelerators) and overhead (VM memory, kube-reserved by
// CPU and by pods, system-reserved, eviction thresholds), per AMI family.
// `simulate` and `explain` use it offline.
//
// The live provider is here too: discovery of instance types and prices
// (discovery.go, pricing.go, refresh.go), an EC2NodeClass's status
// (selectors.go, amis.go, profile.go, status.go), launches (launch.go,
// userdata.go, toml.go), instances by tag and drift (instances.go) and
// interruption events (interruption.go), all through the narrow interfaces
// of apis.go.
package aws

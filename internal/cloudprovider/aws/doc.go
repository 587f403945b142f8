// Package aws is nodewright's AWS provider. This part is pure: it turns the
// instance-type catalog of one region (internal/cloudprovider/aws/catalog)
// into node shapes as Karpenter's AWS provider computes them for an
// EC2NodeClass: requirements from the karpenter.k8s.aws labels, capacity
// (vCPUs, memory less the Graviton CMA reserve, ENI-limited or configured
// max pods, ephemeral storage from the block devices or RAID0 instance
// store, GPUs and accelerators) and overhead (VM memory, kube-reserved by
// CPU and by pods, system-reserved, eviction thresholds), per AMI family.
// `simulate` and `explain` use it offline; launching instances needs the
// live provider, which this package does not have yet.
package aws

// Package awscatalog is nodewright's built-in catalog of EC2 instance types:
// what each type is (vCPUs, memory, network interfaces, GPUs, instance store),
// which zones of which regions offer it, and its prices, as a
// catalog.Catalog per region with every karpenter.k8s.aws label Karpenter's
// AWS provider gives the type. It lets nodewright read Karpenter-on-AWS
// NodePools offline. The facts are generated from moto's copy of EC2's
// DescribeInstanceTypes and offerings data and a price table
// (hack/awscatalog; docs/aws-catalog.md).
package awscatalog

//go:generate go run github.com/nodewright/nodewright/hack/awscatalog -o catalog.json

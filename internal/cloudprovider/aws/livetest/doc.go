// Package livetest runs the AWS provider and the EC2NodeClass controller
// against moto's EC2, SSM and IAM on loopback (with the test front for what
// moto lacks) and a real kube-apiserver.
package livetest

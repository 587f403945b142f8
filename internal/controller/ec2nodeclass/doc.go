// Package ec2nodeclass keeps each EC2NodeClass's status current: the
// subnets, security groups, AMIs and instance profile its selectors resolve
// to, and the conditions that say whether it is Ready to launch with. It
// also cleans up after a deleted class once no NodeClaim uses it.
package ec2nodeclass

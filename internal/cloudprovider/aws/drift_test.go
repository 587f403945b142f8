package aws

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func TestDrift(t *testing.T) {
	resolved := func() *awsv1.EC2NodeClass {
		c := hashClass()
		c.Status = awsv1.EC2NodeClassStatus{
			AMIs:           []awsv1.AMI{{ID: "ami-new"}, {ID: "ami-arm"}},
			Subnets:        []awsv1.Subnet{{ID: "subnet-1", Zone: "us-east-1a"}, {ID: "subnet-2", Zone: "us-east-1b"}},
			SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-1"}, {ID: "sg-2"}},
		}
		return c
	}
	// launched is a claim as claimFrom leaves it for the resolved class.
	launched := func() *karpv1.NodeClaim {
		return &karpv1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{
				AnnotationSubnet:         "subnet-2",
				AnnotationSecurityGroups: "sg-1,sg-2",
				AnnotationNodeClassHash:  NodeClassHash(resolved()),
			}},
			Status: karpv1.NodeClaimStatus{ImageID: "ami-arm"},
		}
	}
	for _, tc := range []struct {
		name  string
		claim func(*karpv1.NodeClaim)
		class func(*awsv1.EC2NodeClass)
		want  string
	}{
		{name: "matches", want: ""},
		{name: "image no longer among the AMIs", claim: func(c *karpv1.NodeClaim) { c.Status.ImageID = "ami-old" }, want: DriftAMI},
		{name: "subnet no longer selected", claim: func(c *karpv1.NodeClaim) { c.Annotations[AnnotationSubnet] = "subnet-9" }, want: DriftSubnet},
		{name: "security groups changed", class: func(c *awsv1.EC2NodeClass) {
			c.Status.SecurityGroups = append(c.Status.SecurityGroups, awsv1.SecurityGroup{ID: "sg-3"})
		}, want: DriftSecurityGroups},
		{name: "security group annotation differs", claim: func(c *karpv1.NodeClaim) { c.Annotations[AnnotationSecurityGroups] = "sg-1" }, want: DriftSecurityGroups},
		{name: "class hash differs", class: func(c *awsv1.EC2NodeClass) { c.Spec.Tags = map[string]string{"team": "db"} }, want: DriftNodeClass},
		{name: "selector terms alone do not drift", class: func(c *awsv1.EC2NodeClass) {
			c.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-1"}}
		}, want: ""},
		{name: "AMI checked first", claim: func(c *karpv1.NodeClaim) {
			c.Status.ImageID, c.Annotations[AnnotationSubnet], c.Annotations[AnnotationNodeClassHash] = "ami-old", "subnet-9", "1"
		}, want: DriftAMI},
		{name: "subnet before security groups and hash", claim: func(c *karpv1.NodeClaim) {
			c.Annotations[AnnotationSubnet], c.Annotations[AnnotationSecurityGroups], c.Annotations[AnnotationNodeClassHash] = "subnet-9", "sg-9", "1"
		}, want: DriftSubnet},
		{name: "empty status AMIs: unknown, no drift", claim: func(c *karpv1.NodeClaim) { c.Status.ImageID = "ami-old" },
			class: func(c *awsv1.EC2NodeClass) { c.Status.AMIs = nil }, want: ""},
		{name: "empty status subnets: unknown, no drift", claim: func(c *karpv1.NodeClaim) { c.Annotations[AnnotationSubnet] = "subnet-9" },
			class: func(c *awsv1.EC2NodeClass) { c.Status.Subnets = nil }, want: ""},
		{name: "empty status security groups: unknown, no drift", claim: func(c *karpv1.NodeClaim) { c.Annotations[AnnotationSecurityGroups] = "sg-9" },
			class: func(c *awsv1.EC2NodeClass) { c.Status.SecurityGroups = nil }, want: ""},
		{name: "no image ID yet", claim: func(c *karpv1.NodeClaim) { c.Status.ImageID = "" }, want: ""},
		{name: "no annotations (adopted or older claim)", claim: func(c *karpv1.NodeClaim) { c.Annotations = nil },
			class: func(c *awsv1.EC2NodeClass) {
				c.Spec.Tags = map[string]string{"team": "db"}
				c.Status.SecurityGroups = []awsv1.SecurityGroup{{ID: "sg-9"}}
			}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim, class := launched(), resolved()
			if tc.claim != nil {
				tc.claim(claim)
			}
			if tc.class != nil {
				tc.class(class)
			}
			if got := Drift(claim, class); got != tc.want {
				t.Errorf("Drift = %q, want %q", got, tc.want)
			}
		})
	}
}

package offline

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/catalog"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
)

// ec2Class is an EC2NodeClass whose status lists a subnet in each zone.
func ec2Class(name string, zones ...string) *awsv1.EC2NodeClass {
	c := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i, z := range zones {
		c.Status.Subnets = append(c.Status.Subnets, awsv1.Subnet{ID: "subnet-" + string(rune('a'+i)), Zone: z})
	}
	return c
}

// ec2Pool is a NodePool on the named EC2NodeClass.
func ec2Pool(class string) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool-" + class}}
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: class}
	return np
}

func regionCatalog(t *testing.T, region string) *catalog.Catalog {
	t.Helper()
	c, err := awscatalog.Region(region)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEC2NodeClassZonesAndRegion checks the region EC2NodeClasses launch
// from offline: taken from their subnets' zones when no catalog is given
// and they agree on one, and, when none of a class's zones is in the
// catalog in use, a NodeClassNotReadyError naming the class, its zones,
// the region and the fix, instead of a NodePool with no instance types.
func TestEC2NodeClassZonesAndRegion(t *testing.T) {
	cases := []struct {
		name    string
		catalog string // built-in region given, "" for none
		classes []*awsv1.EC2NodeClass
		check   string // the class whose NodePool is asked for its types
		// region is what AWSRegion says; zone a zone the types must be
		// offered in; err the parts the error must say ("" for none).
		region, zone string
		err          []string
	}{{
		name:    "subnets in another region, no --region: that region is used and said",
		classes: []*awsv1.EC2NodeClass{ec2Class("default", "us-west-2a", "us-west-2b")},
		check:   "default", region: "us-west-2 (from EC2NodeClass default's subnets)", zone: "us-west-2a",
	}, {
		name:    "two classes in one other region",
		classes: []*awsv1.EC2NodeClass{ec2Class("a", "eu-west-1a"), ec2Class("b", "eu-west-1b", "eu-west-1c"), ec2Class("no-status")},
		check:   "b", region: "eu-west-1 (from the subnets of EC2NodeClasses a, b)", zone: "eu-west-1c",
	}, {
		name:    "subnets in the default region: nothing to say",
		classes: []*awsv1.EC2NodeClass{ec2Class("default", "us-east-1a")},
		check:   "default", zone: "us-east-1a",
	}, {
		name:    "no status: every zone of the default region",
		classes: []*awsv1.EC2NodeClass{ec2Class("default")},
		check:   "default", zone: "us-east-1f",
	}, {
		name:    "a Local Zone names its parent region",
		classes: []*awsv1.EC2NodeClass{ec2Class("default", "us-west-2a", "us-west-2-lax-1a")},
		check:   "default", region: "us-west-2 (from EC2NodeClass default's subnets)", zone: "us-west-2a",
	}, {
		name:    "classes in two regions: the default, and the other one is not ready",
		classes: []*awsv1.EC2NodeClass{ec2Class("east", "us-east-1a"), ec2Class("west", "us-west-2a", "us-west-2b")},
		check:   "west",
		err: []string{"NodeClass west is not ready", "EC2NodeClass west's subnets (status.subnets) are in zones us-west-2a, us-west-2b",
			"AWS region us-east-1 (the default)", "it has us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1e, us-east-1f",
			"pass --region us-west-2"},
	}, {
		name:    "--region given: no guessing, the class is not ready",
		catalog: "us-east-1",
		classes: []*awsv1.EC2NodeClass{ec2Class("default", "us-west-2b", "us-west-2a", "us-west-2a")},
		check:   "default",
		err:     []string{"are in zones us-west-2a, us-west-2b, and AWS region us-east-1, which", "pass --region us-west-2"},
	}, {
		name:    "only a Local Zone, in the region given: the built-in catalog lacks it",
		catalog: "us-west-2",
		classes: []*awsv1.EC2NodeClass{ec2Class("default", "us-west-2-lax-1a")},
		check:   "default",
		err:     []string{"us-west-2-lax-1a", "list availability zones only, not Local or Wavelength Zones", "pass --catalog"},
	}, {
		name:    "a region the built-in catalog does not have",
		classes: []*awsv1.EC2NodeClass{ec2Class("default", "cn-north-1a")},
		check:   "default",
		err:     []string{"cn-north-1a", "(the default)", "region cn-north-1, which the built-in catalog does not have", "pass --catalog"},
	}, {
		name:    "zones that are no AWS zone names",
		classes: []*awsv1.EC2NodeClass{ec2Class("default", "zone-a")},
		check:   "default",
		err:     []string{"zone-a", "pass --region with the region of these zones, or --catalog"},
	}, {
		name:    "some zones in the region: launches in those",
		catalog: "us-east-1",
		classes: []*awsv1.EC2NodeClass{ec2Class("default", "us-east-1a", "us-east-1-bos-1a")},
		check:   "default", zone: "us-east-1a",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{EC2Classes: map[string]*awsv1.EC2NodeClass{}}
			for _, c := range tc.classes {
				opts.EC2Classes[c.Name] = c
			}
			if tc.catalog != "" {
				opts.AWSCatalog = regionCatalog(t, tc.catalog)
			}
			p, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.AWSRegion(); got != tc.region {
				t.Errorf("AWSRegion() = %q, want %q", got, tc.region)
			}
			its, err := p.InstanceTypes(context.Background(), ec2Pool(tc.check))
			if len(tc.err) > 0 {
				var notReady *cloudprovider.NodeClassNotReadyError
				if !errors.As(err, &notReady) || notReady.NodeClass != tc.check {
					t.Fatalf("error %v; want a NodeClassNotReadyError for %s", err, tc.check)
				}
				for _, part := range tc.err {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q does not say %q", err, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(its) == 0 {
				t.Fatal("no instance types")
			}
			zones := map[string]bool{}
			for _, it := range its {
				for _, o := range it.Offerings {
					zones[o.Zone] = true
				}
			}
			if !zones[tc.zone] {
				t.Errorf("no type offered in %s; zones offered: %v", tc.zone, zones)
			}
		})
	}
}

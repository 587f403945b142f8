package aws

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"testing"
)

// apis are the narrow interfaces through which the provider calls AWS, by
// the IAM service prefix of their calls.
var apis = map[string][]reflect.Type{
	"ec2":     {reflect.TypeFor[EC2](), reflect.TypeFor[EC2Network](), reflect.TypeFor[EC2Images](), reflect.TypeFor[EC2Instances](), reflect.TypeFor[EC2SpotPrices]()},
	"pricing": {reflect.TypeFor[Pricing]()},
	"ssm":     {reflect.TypeFor[SSM]()},
	"iam":     {reflect.TypeFor[IAM]()},
	"sqs":     {reflect.TypeFor[SQS]()},
	"eks":     {reflect.TypeFor[EKS]()},
}

// TestIAMPolicyListsEveryCall checks that the IAM policy in docs/aws.md
// allows exactly the calls the provider's interfaces can make.
func TestIAMPolicyListsEveryCall(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/aws.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)## IAM policy.*?```json\n(.*?)```").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/aws.md has no IAM policy JSON block under \"## IAM policy\"")
	}
	var policy struct {
		Statement []struct{ Action []string }
	}
	if err := json.Unmarshal(block[1], &policy); err != nil {
		t.Fatalf("the IAM policy in docs/aws.md is not valid JSON: %v", err)
	}
	var documented, called []string
	for _, s := range policy.Statement {
		documented = append(documented, s.Action...)
	}
	for prefix, types := range apis {
		for _, api := range types {
			for i := range api.NumMethod() {
				called = append(called, prefix+":"+api.Method(i).Name)
			}
		}
	}
	called = append(called, PermissionsWithoutCalls...)
	slices.Sort(documented)
	slices.Sort(called)
	if !slices.Equal(documented, called) {
		t.Errorf("docs/aws.md allows %v; the provider calls %v", documented, called)
	}
}

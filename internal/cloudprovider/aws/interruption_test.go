package aws

import (
	"slices"
	"strings"
	"testing"
)

func TestParseInterruption(t *testing.T) {
	event := func(source, detailType, detail string) string {
		return `{"version":"0","id":"e-1","detail-type":"` + detailType + `","source":"` + source + `","account":"123456789012","time":"2026-11-25T12:00:00Z","region":"us-east-1","resources":[],"detail":` + detail + `}`
	}
	for _, tc := range []struct {
		name     string
		body     string
		kind     InterruptionKind
		ids      []string
		replaces bool
		err      string
	}{
		{"spot", event("aws.ec2", "EC2 Spot Instance Interruption Warning", `{"instance-id":"i-0abc","instance-action":"terminate"}`), SpotInterruption, []string{"i-0abc"}, true, ""},
		{"rebalance", event("aws.ec2", "EC2 Instance Rebalance Recommendation", `{"instance-id":"i-0abc"}`), RebalanceRecommendation, []string{"i-0abc"}, false, ""},
		{"stopping", event("aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"i-0abc","state":"stopping"}`), StateChange, []string{"i-0abc"}, true, ""},
		{"terminated", event("aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"i-0abc","state":"terminated"}`), StateChange, []string{"i-0abc"}, true, ""},
		{"running", event("aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"i-0abc","state":"running"}`), NoAction, []string{"i-0abc"}, false, ""},
		{"health", event("aws.health", "AWS Health Event", `{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"i-1"},{"entityValue":"i-2"}]}`), ScheduledChange, []string{"i-1", "i-2"}, true, ""},
		{"health other service", event("aws.health", "AWS Health Event", `{"service":"RDS","eventTypeCategory":"scheduledChange","affectedEntities":[]}`), NoAction, nil, false, ""},
		{"not json", "hello", "", nil, false, "not an EventBridge event"},
		{"no source", `{"id":"x"}`, "", nil, false, "no source"},
		{"unknown", event("aws.s3", "Object Created", `{}`), "", nil, false, "not one nodewright handles"},
		{"no instance", event("aws.ec2", "EC2 Spot Instance Interruption Warning", `{"instance-action":"terminate"}`), "", nil, false, "no instance-id"},
		{"bad detail", event("aws.ec2", "EC2 Spot Instance Interruption Warning", `"x"`), "", nil, false, "bad detail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseInterruption(tc.body)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tc.kind || !slices.Equal(got.InstanceIDs, tc.ids) || got.Replaces() != tc.replaces {
				t.Errorf("got %+v (replaces %v), want kind %s ids %v replaces %v", got, got.Replaces(), tc.kind, tc.ids, tc.replaces)
			}
		})
	}
}

package interruption

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

func TestDecide(t *testing.T) {
	claim := func(capacityType string, deleting bool) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc", Labels: map[string]string{
			karpv1.CapacityTypeLabelKey: capacityType, corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: "zone-a"}}}
		if deleting {
			nc.DeletionTimestamp = &metav1.Time{}
		}
		return nc
	}
	spotOffering := &cloudprovider.Offering{InstanceType: "m5.large", Zone: "zone-a", CapacityType: karpv1.CapacityTypeSpot}
	type want struct {
		unavailable *cloudprovider.Offering
		del         bool
		action      string
		reason      string
	}
	for _, tc := range []struct {
		name string
		kind cloudprovider.InterruptionKind
		nc   *karpv1.NodeClaim
		want want
	}{
		{"spot interruption of a spot node", cloudprovider.SpotInterruption, claim("spot", false),
			want{spotOffering, true, ActionCordonAndDrain, "SpotInterruption"}},
		{"spot interruption of an on-demand node marks nothing", cloudprovider.SpotInterruption, claim("on-demand", false),
			want{nil, true, ActionCordonAndDrain, "SpotInterruption"}},
		{"spot interruption of a node already going still marks the offering", cloudprovider.SpotInterruption, claim("spot", true),
			want{spotOffering, false, "", ""}},
		{"scheduled change replaces, marks nothing", cloudprovider.ScheduledChange, claim("spot", false),
			want{nil, true, ActionCordonAndDrain, "ScheduledChange"}},
		{"scheduled change of a node already going", cloudprovider.ScheduledChange, claim("on-demand", true), want{}},
		{"state change replaces", cloudprovider.StateChange, claim("on-demand", false),
			want{nil, true, ActionCordonAndDrain, "StateChange"}},
		{"rebalance only records an event", cloudprovider.RebalanceRecommendation, claim("spot", false),
			want{nil, false, ActionNoAction, "RebalanceRecommendation"}},
		{"no action", cloudprovider.NoAction, claim("spot", false), want{nil, false, ActionNoAction, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(cloudprovider.Interruption{Kind: tc.kind, ID: "e-1"}, tc.nc)
			got := want{d.Unavailable, d.Delete, d.Action, d.Reason}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decide = %+v, want %+v", got, tc.want)
			}
			if d.Reason != "" && d.Message == "" {
				t.Errorf("event %s has no message", d.Reason)
			}
		})
	}
}

func TestInstanceID(t *testing.T) {
	for in, want := range map[string]string{
		"aws:///us-east-1a/i-0abc": "i-0abc",
		"kwok://node-1":            "node-1",
		"plain":                    "plain",
		"":                         "",
	} {
		if got := instanceID(in); got != want {
			t.Errorf("instanceID(%q) = %q, want %q", in, got, want)
		}
	}
}

package interruption

import (
	"context"
	"errors"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/metrics"
)

// fakeSource delivers its messages once and counts acknowledgements.
type fakeSource struct {
	msgs  []cloudprovider.InterruptionMessage
	acked []string
}

func (s *fakeSource) String() string { return "fake" }

func (s *fakeSource) Receive(context.Context) ([]cloudprovider.InterruptionMessage, error) {
	out := s.msgs
	s.msgs = nil
	for i := range out {
		id := out[i].ID
		out[i].Ack = func(context.Context) error { s.acked = append(s.acked, id); return nil }
	}
	return out, nil
}

func counter(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestControllerHandlesMessages: whatever the source, the NodeClaims named
// are deleted (spot, maintenance) or only get an event (rebalance), a spot
// offering is marked unavailable, every message is acknowledged and counted
// by kind, and an unparseable one is counted as such.
func TestControllerHandlesMessages(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := karpv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	claim := func(name, providerID, capacityType string) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			karpv1.CapacityTypeLabelKey: capacityType, corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: "zone-a"}}}
		nc.Status.ProviderID = providerID
		return nc
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&karpv1.NodeClaim{}).WithObjects(
		claim("spot", "kwok://spot", "spot"),
		claim("maint", "aws:///zone-a/i-0maint", "on-demand"),
		claim("rebal", "kwok://rebal", "spot"),
		claim("bystander", "kwok://bystander", "spot"),
	).Build()
	src := &fakeSource{msgs: []cloudprovider.InterruptionMessage{
		{ID: "m1", Event: cloudprovider.Interruption{Kind: cloudprovider.SpotInterruption, InstanceIDs: []string{"spot"}, ID: "m1"}},
		{ID: "m2", Event: cloudprovider.Interruption{Kind: cloudprovider.ScheduledChange, InstanceIDs: []string{"i-0maint"}, ID: "m2"}},
		{ID: "m3", Event: cloudprovider.Interruption{Kind: cloudprovider.RebalanceRecommendation, InstanceIDs: []string{"rebal"}, ID: "m3"}},
		{ID: "m4", Err: errors.New("annotation nodewright.dev/kwok-interrupt: unknown interruption")},
		{ID: "m5", Event: cloudprovider.Interruption{Kind: cloudprovider.SpotInterruption, InstanceIDs: []string{"nobody"}, ID: "m5"}},
	}}
	rec := record.NewFakeRecorder(10)
	var marked []cloudprovider.Offering
	ctrl := &Controller{Client: c, Source: src, Recorder: rec, Unavailable: func(o cloudprovider.Offering) { marked = append(marked, o) }}

	before := map[string]float64{}
	for _, k := range []string{"SpotInterruption", "ScheduledChange", "RebalanceRecommendation", "Unparseable"} {
		before[k] = counter(t, metrics.InterruptionMessages.WithLabelValues(k))
	}
	drained := counter(t, metrics.InterruptionActions.WithLabelValues(ActionCordonAndDrain, "ScheduledChange"))
	deleted := counter(t, metrics.InterruptionDeleted)

	if err := ctrl.Once(context.Background()); err != nil {
		t.Fatal(err)
	}

	for name, gone := range map[string]bool{"spot": true, "maint": true, "rebal": false, "bystander": false} {
		err := c.Get(context.Background(), client.ObjectKey{Name: name}, &karpv1.NodeClaim{})
		if gone != apierrors.IsNotFound(err) {
			t.Errorf("NodeClaim %s: deleted %v, want %v (err %v)", name, apierrors.IsNotFound(err), gone, err)
		}
	}
	want := cloudprovider.Offering{InstanceType: "m5.large", Zone: "zone-a", CapacityType: "spot"}
	if len(marked) != 1 || marked[0] != want {
		t.Errorf("marked unavailable %v, want [%v]", marked, want)
	}
	if strings.Join(src.acked, ",") != "m1,m2,m3,m4,m5" {
		t.Errorf("acknowledged %v, want every message", src.acked)
	}
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, strings.Fields(<-rec.Events)[1])
	}
	if strings.Join(events, ",") != "SpotInterruption,ScheduledChange,RebalanceRecommendation" {
		t.Errorf("event reasons %v", events)
	}
	for k, n := range map[string]float64{"SpotInterruption": 2, "ScheduledChange": 1, "RebalanceRecommendation": 1, "Unparseable": 1} {
		if got := counter(t, metrics.InterruptionMessages.WithLabelValues(k)) - before[k]; got != n {
			t.Errorf("received_messages_total{message_type=%q} grew by %v, want %v", k, got, n)
		}
	}
	if got := counter(t, metrics.InterruptionActions.WithLabelValues(ActionCordonAndDrain, "ScheduledChange")) - drained; got != 1 {
		t.Errorf("actions_performed_total{CordonAndDrain,ScheduledChange} grew by %v, want 1", got)
	}
	if got := counter(t, metrics.InterruptionDeleted) - deleted; got != 5 {
		t.Errorf("deleted_messages_total grew by %v, want 5", got)
	}
}

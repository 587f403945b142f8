package kwok

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

func TestEffectiveFaultsFillFromDefaults(t *testing.T) {
	defaults := kwokv1alpha1.KWOKFaults{
		LaunchErrors:         int32p(3),
		LaunchErrorPercent:   int32p(10),
		ThrottledPercent:     int32p(20),
		InsufficientCapacity: []kwokv1alpha1.KWOKOfferingSelector{{Zone: "zone-a"}},
		RegistrationDelay:    duration(time.Minute),
		AgentTaints:          []kwokv1alpha1.KWOKAgentTaint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}},
	}
	cases := []struct {
		name  string
		class *kwokv1alpha1.KWOKFaults
		want  kwokv1alpha1.KWOKFaults
	}{
		{"no faults", nil, defaults},
		{"empty faults", &kwokv1alpha1.KWOKFaults{}, defaults},
		{"class overrides some", &kwokv1alpha1.KWOKFaults{LaunchErrors: int32p(0), RegistrationDelay: duration(0),
			InsufficientCapacity: []kwokv1alpha1.KWOKOfferingSelector{}, LaunchErrorPercent: int32p(0), DeleteErrorPercent: int32p(30),
			LostResponsePercent: int32p(50)},
			kwokv1alpha1.KWOKFaults{LaunchErrors: int32p(0), RegistrationDelay: duration(0),
				InsufficientCapacity: []kwokv1alpha1.KWOKOfferingSelector{}, AgentTaints: defaults.AgentTaints,
				LaunchErrorPercent: int32p(0), DeleteErrorPercent: int32p(30), ThrottledPercent: int32p(20), LostResponsePercent: int32p(50)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := effectiveFaults(tc.class, defaults); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestOutOfCapacityMatchesSelectors(t *testing.T) {
	o := cloudprovider.Offering{InstanceType: "m5.large", Zone: "zone-a", CapacityType: "spot"}
	cases := []struct {
		sel  kwokv1alpha1.KWOKOfferingSelector
		want bool
	}{
		{kwokv1alpha1.KWOKOfferingSelector{}, true},
		{kwokv1alpha1.KWOKOfferingSelector{InstanceType: "m5.large", Zone: "zone-a", CapacityType: "spot"}, true},
		{kwokv1alpha1.KWOKOfferingSelector{Zone: "zone-a"}, true},
		{kwokv1alpha1.KWOKOfferingSelector{Zone: "zone-b"}, false},
		{kwokv1alpha1.KWOKOfferingSelector{InstanceType: "m5.large", CapacityType: "on-demand"}, false},
	}
	for _, tc := range cases {
		f := kwokv1alpha1.KWOKFaults{InsufficientCapacity: []kwokv1alpha1.KWOKOfferingSelector{tc.sel}}
		if got := outOfCapacity(f, o); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.sel, got, tc.want)
		}
	}
}

func TestRegistrationTime(t *testing.T) {
	launched := metav1.NewTime(epoch)
	cases := []struct {
		name        string
		annotations map[string]string
		providerID  string
		conditions  []metav1.Condition
		want        time.Duration // after epoch; negative: no registration due
	}{
		{"from the annotation", map[string]string{LaunchedAtAnnotation: epoch.Add(time.Second).Format(time.RFC3339), RegistrationDelayAnnotation: "30s"},
			"kwok://c", nil, 31 * time.Second},
		{"from the Launched condition", map[string]string{RegistrationDelayAnnotation: "1m"}, "kwok://c",
			[]metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, LastTransitionTime: launched}}, time.Minute},
		{"not launched", map[string]string{RegistrationDelayAnnotation: "1m"}, "kwok://c", nil, -1},
		{"no delay", map[string]string{LaunchedAtAnnotation: epoch.Format(time.RFC3339), RegistrationDelayAnnotation: "0s"}, "kwok://c", nil, -1},
		{"another provider", map[string]string{LaunchedAtAnnotation: epoch.Format(time.RFC3339), RegistrationDelayAnnotation: "1m"}, "aws:///c", nil, -1},
		{"no provider ID", map[string]string{LaunchedAtAnnotation: epoch.Format(time.RFC3339), RegistrationDelayAnnotation: "1m"}, "", nil, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: tc.annotations},
				Status: karpv1.NodeClaimStatus{ProviderID: tc.providerID, Conditions: tc.conditions}}
			at, ok := registrationTime(claim)
			switch {
			case tc.want < 0 && ok:
				t.Errorf("registration due at %v, want none", at)
			case tc.want >= 0 && (!ok || !at.Equal(epoch.Add(tc.want))):
				t.Errorf("registration at %v (%v), want epoch+%v", at, ok, tc.want)
			}
		})
	}
}

// TestFaultsSchema sends KWOKNodeClasses to the API server: the example of
// docs/kwok.md is accepted as written, and each kind of bad input is refused
// with a message naming the field.
func TestFaultsSchema(t *testing.T) {
	const example = `
apiVersion: nodewright.dev/v1alpha1
kind: KWOKNodeClass
metadata: {name: faults-example}
spec:
  image: kwok-image-v2
  faults:
    launchErrors: 2
    launchErrorPercent: 30
    deleteErrorPercent: 30
    throttledPercent: 30
    lostResponsePercent: 50
    insufficientCapacity:
    - instanceType: m5.large
      zone: zone-a
      capacityType: spot
    - zone: zone-c
    registrationDelay: 30s
    notReady:
      after: 30s
      for: 60s
    agentTaints:
    - key: node.cilium.io/agent-not-ready
      value: "true"
      effect: NoSchedule
      removeAfter: 20s
`
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(example), &u.Object); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := cluster.Client.Create(ctx, u, client.DryRunAll); err != nil {
		t.Fatalf("the documented example was refused: %v", err)
	}
	var nc kwokv1alpha1.KWOKNodeClass
	if err := yaml.Unmarshal([]byte(example), &nc); err != nil {
		t.Fatal(err)
	}
	f := nc.Spec.Faults
	if *f.LaunchErrors != 2 || f.RegistrationDelay.Duration != 30*time.Second || f.NotReady.For.Duration != time.Minute ||
		f.AgentTaints[0].RemoveAfter.Duration != 20*time.Second || f.InsufficientCapacity[1] != (kwokv1alpha1.KWOKOfferingSelector{Zone: "zone-c"}) ||
		*f.LaunchErrorPercent != 30 || *f.DeleteErrorPercent != 30 || *f.ThrottledPercent != 30 || *f.LostResponsePercent != 50 {
		t.Errorf("decoded %+v", f)
	}

	cases := []struct{ name, faults, want string }{
		{"negative launch errors", `{launchErrors: -1}`, "spec.faults.launchErrors"},
		{"launch error percent over 100", `{launchErrorPercent: 101}`, "spec.faults.launchErrorPercent"},
		{"negative delete error percent", `{deleteErrorPercent: -1}`, "spec.faults.deleteErrorPercent"},
		{"throttled percent over 100", `{throttledPercent: 150}`, "spec.faults.throttledPercent"},
		{"lost response percent as a fraction", `{lostResponsePercent: "0.5"}`, "spec.faults.lostResponsePercent"},
		{"unknown capacity type", `{insufficientCapacity: [{capacityType: preemptible}]}`, "spec.faults.insufficientCapacity[0].capacityType"},
		{"duration in words", `{registrationDelay: soon}`, "spec.faults.registrationDelay"},
		{"window without length", `{notReady: {after: 30s}}`, "spec.faults.notReady.for"},
		{"unknown effect", `{agentTaints: [{key: a, effect: Sometimes}]}`, "spec.faults.agentTaints[0].effect"},
		{"taint twice", `{agentTaints: [{key: a, effect: NoSchedule}, {key: a, effect: NoSchedule, value: b}]}`, "Duplicate value"},
		{"bad taint key", `{agentTaints: [{key: "-a", effect: NoSchedule}]}`, "spec.faults.agentTaints[0].key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			manifest := "apiVersion: nodewright.dev/v1alpha1\nkind: KWOKNodeClass\nmetadata: {name: bad}\nspec: {faults: " + tc.faults + "}"
			if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
				t.Fatal(err)
			}
			err := cluster.Client.Create(ctx, u, client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

package drift

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// testPool is a NodePool with every field Hash covers set, and the fields it
// ignores set too, so that tests can change one at a time.
func testPool() *karpv1.NodePool {
	return &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{
				ObjectMeta: karpv1.ObjectMeta{
					Labels:      map[string]string{"team": "web", "tier": "frontend"},
					Annotations: map[string]string{"example.com/owner": "web-team"},
				},
				Spec: karpv1.NodeClaimTemplateSpec{
					Taints: []corev1.Taint{
						{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule},
						{Key: "example.com/gpu", Effect: corev1.TaintEffectNoExecute},
					},
					StartupTaints: []corev1.Taint{
						{Key: "node.cilium.io/agent-not-ready", Value: "true", Effect: corev1.TaintEffectNoExecute},
					},
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
						req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a", "zone-b"),
						req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot),
						req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
					},
					NodeClassRef:           &karpv1.NodeClassReference{Group: "nodewright.dev", Kind: "KWOKNodeClass", Name: "default"},
					TerminationGracePeriod: &metav1.Duration{Duration: 48 * time.Hour},
					ExpireAfter:            karpv1.MustParseNillableDuration("720h"),
				},
			},
			Disruption: karpv1.Disruption{
				ConsolidateAfter:    karpv1.MustParseNillableDuration("30s"),
				ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				Budgets:             []karpv1.Budget{{Nodes: "10%"}},
			},
			Limits: karpv1.Limits{corev1.ResourceCPU: resource.MustParse("1000")},
			Weight: ptr.To(int32(10)),
		},
	}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{
		NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values},
	}
}

// testClaim is an initialized claim of testPool, stamped with its hash and
// labelled as the cloud provider labels a launched instance.
func testClaim(np *karpv1.NodePool) *karpv1.NodeClaim {
	c := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: "default-abcde",
			Labels: map[string]string{
				karpv1.NodePoolLabelKey:          np.Name,
				"team":                           "web",
				"tier":                           "frontend",
				corev1.LabelInstanceTypeStable:   "c-4x-amd64-linux",
				corev1.LabelTopologyZone:         "zone-a",
				karpv1.CapacityTypeLabelKey:      karpv1.CapacityTypeSpot,
				corev1.LabelArchStable:           "amd64",
				corev1.LabelOSStable:             "linux",
				"karpenter.kwok.sh/instance-cpu": "4",
			},
		},
		Status: karpv1.NodeClaimStatus{Conditions: []metav1.Condition{
			{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue},
			{Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionTrue},
			{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue},
		}},
	}
	Stamp(c, np)
	return c
}

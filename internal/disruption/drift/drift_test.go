package drift

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func TestDrifted(t *testing.T) {
	tests := []struct {
		name  string
		pool  func(*karpv1.NodePool)
		claim func(*karpv1.NodeClaim)
		node  *corev1.Node
		cloud string
		want  Reason // "" for not drifted
		// message, when set, must appear in the verdict's message.
		message string
	}{
		{name: "fresh claim matches its pool"},
		{
			name: "template label changed", want: NodePoolDrifted, message: "NodePool default's template",
			pool: func(np *karpv1.NodePool) { np.Spec.Template.Labels["team"] = "api" },
		},
		{
			name: "taint added", want: NodePoolDrifted,
			pool: func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, corev1.Taint{Key: "x", Effect: corev1.TaintEffectNoSchedule})
			},
		},
		{
			name: "expireAfter changed", want: NodePoolDrifted,
			pool: func(np *karpv1.NodePool) { np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("24h") },
		},
		{
			name: "template changed but hash of another version",
			pool: func(np *karpv1.NodePool) { np.Spec.Template.Labels["team"] = "api" },
			claim: func(c *karpv1.NodeClaim) {
				c.Annotations[karpv1.NodePoolHashVersionAnnotationKey] = "v3"
			},
		},
		{
			name:  "template changed but claim never stamped",
			pool:  func(np *karpv1.NodePool) { np.Spec.Template.Labels["team"] = "api" },
			claim: func(c *karpv1.NodeClaim) { c.Annotations = nil },
		},
		{
			name:  "template changed but hash annotation missing",
			pool:  func(np *karpv1.NodePool) { np.Spec.Template.Labels["team"] = "api" },
			claim: func(c *karpv1.NodeClaim) { delete(c.Annotations, karpv1.NodePoolHashAnnotationKey) },
		},
		{
			name: "In value removed", want: RequirementsDrifted,
			message: `key "topology.kubernetes.io/zone": node label is "zone-a", required In [zone-b]`,
			pool:    func(np *karpv1.NodePool) { np.Spec.Template.Spec.Requirements[0].Values = []string{"zone-b"} },
		},
		{
			name: "In value added",
			pool: func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Requirements[0].Values = append(np.Spec.Template.Spec.Requirements[0].Values, "zone-c")
			},
		},
		{
			name: "NotIn excludes the claim's value", want: RequirementsDrifted,
			pool: func(np *karpv1.NodePool) {
				addReq(np, req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpNotIn, karpv1.CapacityTypeSpot))
			},
		},
		{
			name: "NotIn excludes another value",
			pool: func(np *karpv1.NodePool) {
				addReq(np, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpNotIn, "c-8x-amd64-linux"))
			},
		},
		{
			name: "In on a label the claim lacks", want: RequirementsDrifted, message: "node label is absent",
			pool: func(np *karpv1.NodePool) { addReq(np, req("example.com/pool", corev1.NodeSelectorOpIn, "blue")) },
		},
		{
			name: "Exists on a label the claim lacks", want: RequirementsDrifted,
			pool: func(np *karpv1.NodePool) { addReq(np, req("example.com/pool", corev1.NodeSelectorOpExists)) },
		},
		{
			name: "NotIn on a label the claim lacks",
			pool: func(np *karpv1.NodePool) { addReq(np, req("example.com/pool", corev1.NodeSelectorOpNotIn, "blue")) },
		},
		{
			name: "DoesNotExist on a label the claim lacks",
			pool: func(np *karpv1.NodePool) { addReq(np, req("example.com/pool", corev1.NodeSelectorOpDoesNotExist)) },
		},
		{
			name: "DoesNotExist on a label the claim has", want: RequirementsDrifted,
			pool: func(np *karpv1.NodePool) { addReq(np, req(corev1.LabelOSStable, corev1.NodeSelectorOpDoesNotExist)) },
		},
		{
			name: "Gt bound above the claim's value", want: RequirementsDrifted, message: `node label is "4"`,
			pool: func(np *karpv1.NodePool) {
				addReq(np, req("karpenter.kwok.sh/instance-cpu", corev1.NodeSelectorOpGt, "4"))
			},
		},
		{
			name: "Gt bound below the claim's value",
			pool: func(np *karpv1.NodePool) {
				addReq(np, req("karpenter.kwok.sh/instance-cpu", corev1.NodeSelectorOpGt, "3"))
			},
		},
		{
			name: "Lt bound at the claim's value", want: RequirementsDrifted,
			pool: func(np *karpv1.NodePool) {
				addReq(np, req("karpenter.kwok.sh/instance-cpu", corev1.NodeSelectorOpLt, "4"))
			},
		},
		{
			name: "Gte bound at the claim's value",
			pool: func(np *karpv1.NodePool) {
				addReq(np, req("karpenter.kwok.sh/instance-cpu", karpv1.NodeSelectorOpGte, "4"))
			},
		},
		{
			name: "Lte bound below the claim's value", want: RequirementsDrifted,
			pool: func(np *karpv1.NodePool) {
				addReq(np, req("karpenter.kwok.sh/instance-cpu", karpv1.NodeSelectorOpLte, "2"))
			},
		},
		{
			name: "Gt on a label the claim lacks", want: RequirementsDrifted,
			pool: func(np *karpv1.NodePool) { addReq(np, req("example.com/generation", corev1.NodeSelectorOpGt, "2")) },
		},
		{
			name: "minValues the claim alone cannot span is ignored",
			pool: func(np *karpv1.NodePool) { np.Spec.Template.Spec.Requirements[0].MinValues = ptr.To(2) },
		},
		{
			name: "node label fills a label the claim lacks",
			pool: func(np *karpv1.NodePool) { addReq(np, req("example.com/pool", corev1.NodeSelectorOpIn, "blue")) },
			node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"example.com/pool": "blue"}}},
		},
		{
			name: "claim label wins over an edited node label",
			node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{corev1.LabelTopologyZone: "zone-z"}}},
		},
		{
			name: "cloud provider reports drift", cloud: "ImageDrift", want: "ImageDrift",
		},
		{
			name: "template hash wins over requirements and cloud", cloud: "ImageDrift", want: NodePoolDrifted,
			pool: func(np *karpv1.NodePool) {
				np.Spec.Template.Labels["team"] = "api"
				np.Spec.Template.Spec.Requirements[0].Values = []string{"zone-b"}
			},
		},
		{
			name: "requirements win over cloud", cloud: "ImageDrift", want: RequirementsDrifted,
			pool: func(np *karpv1.NodePool) { np.Spec.Template.Spec.Requirements[0].Values = []string{"zone-b"} },
		},
		{
			name: "claim not initialized is never drifted", cloud: "ImageDrift",
			pool: func(np *karpv1.NodePool) {
				np.Spec.Template.Labels["team"] = "api"
				np.Spec.Template.Spec.Requirements[0].Values = []string{"zone-b"}
			},
			claim: func(c *karpv1.NodeClaim) { c.Status.Conditions[2].Status = metav1.ConditionFalse },
		},
		{
			name: "claim only launched is never drifted", cloud: "ImageDrift",
			claim: func(c *karpv1.NodeClaim) { c.Status.Conditions = c.Status.Conditions[:1] },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := testPool()
			claim := testClaim(np)
			if tt.pool != nil {
				tt.pool(np)
			}
			if tt.claim != nil {
				tt.claim(claim)
			}
			got, drifted := Drifted(np, claim, tt.node, tt.cloud)
			if drifted != (tt.want != "") || got.Reason != tt.want {
				t.Fatalf("Drifted = %v, %v; want reason %q", got, drifted, tt.want)
			}
			if drifted && got.Message == "" {
				t.Errorf("verdict %q has no message", got.Reason)
			}
			if !strings.Contains(got.Message, tt.message) {
				t.Errorf("message %q does not contain %q", got.Message, tt.message)
			}
		})
	}
}

// Changes outside the template, or that only reorder it, must leave every
// node where it is.
func TestDriftIgnoresChangesOutsideTheTemplate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*karpv1.NodePool)
	}{
		{"weight", func(np *karpv1.NodePool) { np.Spec.Weight = ptr.To(int32(100)) }},
		{"limits", func(np *karpv1.NodePool) { np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("1")} }},
		{"disruption", func(np *karpv1.NodePool) {
			np.Spec.Disruption = karpv1.Disruption{
				ConsolidateAfter:    karpv1.MustParseNillableDuration("10m"),
				ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmpty,
				Budgets:             []karpv1.Budget{{Nodes: "0"}},
			}
		}},
		{"requirements order", func(np *karpv1.NodePool) {
			r := np.Spec.Template.Spec.Requirements
			r[0], r[1], r[2] = r[2], r[0], r[1]
		}},
		{"requirement values order", func(np *karpv1.NodePool) {
			v := np.Spec.Template.Spec.Requirements[1].Values
			v[0], v[1] = v[1], v[0]
		}},
		{"taints order", func(np *karpv1.NodePool) {
			ts := np.Spec.Template.Spec.Taints
			ts[0], ts[1] = ts[1], ts[0]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := testPool()
			claim := testClaim(np)
			tt.change(np)
			if d, drifted := Drifted(np, claim, nil, ""); drifted {
				t.Errorf("drifted: %v", d)
			}
		})
	}
}

func addReq(np *karpv1.NodePool, r karpv1.NodeSelectorRequirementWithMinValues) {
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, r)
}

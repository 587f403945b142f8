package drift

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// goldenHash is Hash(testPool()), checked by hand with an independent
// FNV-64a over the canonical encoding. If it changes, the algorithm changed:
// bump HashVersion, or every running node would be replaced at once.
const goldenHash = "10590073464072222979"

func TestHashIsStableAcrossReleases(t *testing.T) {
	if got := Hash(testPool()); got != goldenHash {
		t.Fatalf("Hash(testPool()) = %s, want %s; a change of the hash algorithm needs a new HashVersion", got, goldenHash)
	}
}

func TestHashChangesWithEachTemplateFieldThatDrifts(t *testing.T) {
	tests := []struct {
		name   string
		change func(*karpv1.NodePool)
	}{
		{"label added", func(np *karpv1.NodePool) { np.Spec.Template.Labels["new"] = "x" }},
		{"label value changed", func(np *karpv1.NodePool) { np.Spec.Template.Labels["team"] = "api" }},
		{"label removed", func(np *karpv1.NodePool) { delete(np.Spec.Template.Labels, "tier") }},
		{"labels cleared", func(np *karpv1.NodePool) { np.Spec.Template.Labels = nil }},
		{"label with empty value added", func(np *karpv1.NodePool) { np.Spec.Template.Labels["flag"] = "" }},
		{"annotation added", func(np *karpv1.NodePool) { np.Spec.Template.Annotations["example.com/cost-center"] = "42" }},
		{"annotation value changed", func(np *karpv1.NodePool) { np.Spec.Template.Annotations["example.com/owner"] = "api-team" }},
		{"annotation removed", func(np *karpv1.NodePool) { np.Spec.Template.Annotations = nil }},
		{"taint added", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule})
		}},
		{"taint removed", func(np *karpv1.NodePool) { np.Spec.Template.Spec.Taints = np.Spec.Template.Spec.Taints[:1] }},
		{"taint value changed", func(np *karpv1.NodePool) { np.Spec.Template.Spec.Taints[0].Value = "api" }},
		{"taint effect changed", func(np *karpv1.NodePool) { np.Spec.Template.Spec.Taints[0].Effect = corev1.TaintEffectNoExecute }},
		{"taint moved to startup taints", func(np *karpv1.NodePool) {
			s := &np.Spec.Template.Spec
			s.StartupTaints = append(s.StartupTaints, s.Taints[1])
			s.Taints = s.Taints[:1]
		}},
		{"startup taint added", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.StartupTaints = append(np.Spec.Template.Spec.StartupTaints, corev1.Taint{Key: "ebs.csi.aws.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute})
		}},
		{"startup taint removed", func(np *karpv1.NodePool) { np.Spec.Template.Spec.StartupTaints = nil }},
		{"nodeClassRef name changed", func(np *karpv1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "gpu" }},
		{"nodeClassRef kind changed", func(np *karpv1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Kind = "OtherNodeClass" }},
		{"nodeClassRef group changed", func(np *karpv1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Group = "example.com" }},
		{"expireAfter changed", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("168h")
		}},
		{"expireAfter set to Never", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration(karpv1.Never)
		}},
		{"terminationGracePeriod changed", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		}},
		{"terminationGracePeriod removed", func(np *karpv1.NodePool) { np.Spec.Template.Spec.TerminationGracePeriod = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := testPool()
			tt.change(np)
			if got := Hash(np); got == goldenHash {
				t.Errorf("Hash did not change (%s)", got)
			}
		})
	}
}

func TestHashIgnoresFieldsThatDoNotDrift(t *testing.T) {
	tests := []struct {
		name   string
		change func(*karpv1.NodePool)
	}{
		{"weight", func(np *karpv1.NodePool) { np.Spec.Weight = ptr.To(int32(90)) }},
		{"weight removed", func(np *karpv1.NodePool) { np.Spec.Weight = nil }},
		{"limits", func(np *karpv1.NodePool) { np.Spec.Limits[corev1.ResourceMemory] = resource.MustParse("1Ti") }},
		{"limits removed", func(np *karpv1.NodePool) { np.Spec.Limits = nil }},
		{"replicas", func(np *karpv1.NodePool) { np.Spec.Replicas = ptr.To(int64(3)) }},
		{"consolidateAfter", func(np *karpv1.NodePool) {
			np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration(karpv1.Never)
		}},
		{"consolidationPolicy", func(np *karpv1.NodePool) {
			np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
		}},
		{"budgets", func(np *karpv1.NodePool) {
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}}
		}},
		{"requirements reordered", func(np *karpv1.NodePool) {
			r := np.Spec.Template.Spec.Requirements
			r[0], r[2] = r[2], r[0]
		}},
		{"requirement values reordered", func(np *karpv1.NodePool) {
			v := np.Spec.Template.Spec.Requirements[0].Values
			v[0], v[1] = v[1], v[0]
		}},
		{"requirement changed", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements[0].Values = []string{"zone-c"}
		}},
		{"requirement minValues", func(np *karpv1.NodePool) { np.Spec.Template.Spec.Requirements[0].MinValues = ptr.To(2) }},
		{"taints reordered", func(np *karpv1.NodePool) {
			ts := np.Spec.Template.Spec.Taints
			ts[0], ts[1] = ts[1], ts[0]
		}},
		{"same expireAfter written differently", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("43200m")
		}},
		{"same terminationGracePeriod written differently", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 2880 * time.Minute}
		}},
		{"NodePool's own labels and annotations", func(np *karpv1.NodePool) {
			np.Labels = map[string]string{"app": "x"}
			np.Annotations = map[string]string{karpv1.NodePoolHashAnnotationKey: "123"}
		}},
		{"status", func(np *karpv1.NodePool) { np.Status.Nodes = ptr.To(int64(7)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := testPool()
			tt.change(np)
			if got := Hash(np); got != goldenHash {
				t.Errorf("Hash changed to %s, want %s", got, goldenHash)
			}
		})
	}
}

func TestHashTreatsEmptyAndUnsetAlike(t *testing.T) {
	unset := &karpv1.NodePool{}
	empty := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{
		ObjectMeta: karpv1.ObjectMeta{Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec:       karpv1.NodeClaimTemplateSpec{Taints: []corev1.Taint{}, StartupTaints: []corev1.Taint{}},
	}}}
	if a, b := Hash(unset), Hash(empty); a != b {
		t.Errorf("unset template hashes to %s, empty one to %s", a, b)
	}
}

func TestHashKeepsDuplicateTaints(t *testing.T) {
	one := testPool()
	two := testPool()
	two.Spec.Template.Spec.Taints = append(two.Spec.Template.Spec.Taints, two.Spec.Template.Spec.Taints[0])
	if Hash(one) == Hash(two) {
		t.Error("a duplicated taint did not change the hash")
	}
}

func TestStampSetsHashAndVersion(t *testing.T) {
	np := testPool()
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"keep": "me"}}}
	Stamp(c, np)
	want := map[string]string{
		"keep":                                  "me",
		karpv1.NodePoolHashAnnotationKey:        goldenHash,
		karpv1.NodePoolHashVersionAnnotationKey: HashVersion,
	}
	if len(c.Annotations) != len(want) {
		t.Fatalf("annotations = %v, want %v", c.Annotations, want)
	}
	for k, v := range want {
		if c.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, c.Annotations[k], v)
		}
	}
	var bare karpv1.NodeClaim
	Stamp(&bare, np)
	if bare.Annotations[karpv1.NodePoolHashAnnotationKey] != goldenHash {
		t.Errorf("Stamp on a claim without annotations gave %v", bare.Annotations)
	}
}

func TestNeedsRestampWhenVersionDiffers(t *testing.T) {
	drifted := metav1.Condition{Type: karpv1.ConditionTypeDrifted, Status: metav1.ConditionTrue}
	tests := []struct {
		name        string
		annotations map[string]string
		conditions  []metav1.Condition
		want        bool
	}{
		{"current version", map[string]string{karpv1.NodePoolHashVersionAnnotationKey: HashVersion}, nil, false},
		{"Karpenter's version", map[string]string{karpv1.NodePoolHashVersionAnnotationKey: "v3"}, nil, true},
		{"no stamp", nil, nil, true},
		{"other version but already drifted", map[string]string{karpv1.NodePoolHashVersionAnnotationKey: "v3"}, []metav1.Condition{drifted}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}}
			c.Status.Conditions = tt.conditions
			if got := NeedsRestamp(c); got != tt.want {
				t.Errorf("NeedsRestamp = %v, want %v", got, tt.want)
			}
		})
	}
}

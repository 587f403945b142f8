package nodeclaim

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// TestShapeIssues: a node with less than 90% of a resource its claim
// promised, for a resource the claim's pods requested, is inconsistent;
// claims not initialized or being deleted are not checked.
func TestShapeIssues(t *testing.T) {
	initialized := []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"}}
	claim := func(requests, capacity corev1.ResourceList, conds []metav1.Condition, deleted bool) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
		nc.Spec.Resources.Requests = requests
		nc.Status.Capacity = capacity
		nc.Status.Conditions = conds
		if deleted {
			now := metav1.Now()
			nc.DeletionTimestamp = &now
		}
		return nc
	}
	node := func(capacity corev1.ResourceList) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Capacity: capacity}}
	}
	promised := rl("cpu", "4", "memory", "16Gi", "pods", "110")
	for _, tc := range []struct {
		name string
		nc   *karpv1.NodeClaim
		node *corev1.Node
		want []string
	}{
		{"as promised", claim(rl("cpu", "1", "memory", "1Gi"), promised, initialized, false), node(promised), nil},
		{"within 10%", claim(rl("memory", "1Gi"), promised, initialized, false), node(rl("cpu", "4", "memory", "15Gi")), nil},
		{"short of memory", claim(rl("cpu", "1", "memory", "1Gi"), promised, initialized, false), node(rl("cpu", "4", "memory", "8Gi")),
			[]string{"expected 16Gi of resource memory, but found 8Gi (50.0% of expected)"}},
		{"short of two, in name order", claim(rl("memory", "1Gi", "cpu", "1"), promised, initialized, false), node(rl("cpu", "2", "memory", "8Gi")),
			[]string{"expected 4 of resource cpu, but found 2 (50.0% of expected)", "expected 16Gi of resource memory"}},
		{"a resource missing", claim(rl("example.com/gpu", "1"), rl("example.com/gpu", "2"), initialized, false), node(promised),
			[]string{"expected 2 of resource example.com/gpu, but found 0 (0.0% of expected)"}},
		{"not requested", claim(rl("cpu", "1"), promised, initialized, false), node(rl("cpu", "4", "memory", "1Gi")), nil},
		{"nothing promised", claim(rl("memory", "1Gi"), nil, initialized, false), node(rl("memory", "1Gi")), nil},
		{"not initialized", claim(rl("memory", "1Gi"), promised, nil, false), node(rl("memory", "1Gi")), nil},
		{"being deleted", claim(rl("memory", "1Gi"), promised, initialized, true), node(rl("memory", "1Gi")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := shapeIssues(tc.nc, tc.node)
			if len(got) != len(tc.want) {
				t.Fatalf("issues %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("issue %q, want %q", got[i], tc.want[i])
				}
			}
		})
	}
}

// TestDrainIssues: a deleted claim's node is inconsistent while a
// PodDisruptionBudget refuses to let one of its pods go, once per PDB;
// do-not-disrupt and PDBs that allow disruptions are not issues.
func TestDrainIssues(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	deleted := metav1.NewTime(now.Add(-time.Hour))
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", DeletionTimestamp: &deleted}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	pod := func(name string, labels map[string]string, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels, Annotations: annotations},
			Spec:   corev1.PodSpec{NodeName: "n"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	pdb := func(name, app string, allowed int32) *policyv1.PodDisruptionBudget {
		one := intstr.FromInt32(1)
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}}
	}
	web := map[string]string{"app": "web"}
	for _, tc := range []struct {
		name string
		nc   *karpv1.NodeClaim
		pods []*corev1.Pod
		pdbs []*policyv1.PodDisruptionBudget
		want []string
	}{
		{"a PDB that allows none", nc, []*corev1.Pod{pod("a", web, nil), pod("b", web, nil)}, []*policyv1.PodDisruptionBudget{pdb("web", "web", 0)},
			[]string{`can't drain node n, PDB "ns/web" is blocking evictions`}},
		{"a PDB that allows one", nc, []*corev1.Pod{pod("a", web, nil)}, []*policyv1.PodDisruptionBudget{pdb("web", "web", 1)}, nil},
		{"do-not-disrupt is not a PDB", nc, []*corev1.Pod{pod("a", nil, map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"})}, nil, nil},
		{"not deleted", &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, []*corev1.Pod{pod("a", web, nil)},
			[]*policyv1.PodDisruptionBudget{pdb("web", "web", 0)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := drainIssues(tc.nc, node, tc.pods, tc.pdbs, now)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("issues %q, want %q", got, tc.want)
			}
		})
	}
}

// TestConsistentState: True without issues, False naming them; only issues
// the condition does not name yet are announced.
func TestConsistentState(t *testing.T) {
	if c := consistentState(nil); c.Status != metav1.ConditionTrue || c.Reason != karpv1.ConditionTypeConsistentStateFound {
		t.Errorf("no issues: %+v", c)
	}
	c := consistentState([]string{"a is short", "b is short"})
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonConsistencyCheckFailed || c.Message != "a is short; b is short" {
		t.Errorf("two issues: %+v", c)
	}
	nc := &karpv1.NodeClaim{}
	nc.Status.Conditions = []metav1.Condition{*consistentState([]string{"a is short"})}
	if got := newIssues(nc, []string{"a is short", "b is short"}); len(got) != 1 || got[0] != "b is short" {
		t.Errorf("new issues %q, want only b", got)
	}
}

// TestScansWait: a deleted claim is first checked ConsistencyInterval after
// its deletion, then every interval.
func TestScansWait(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var s scans
	if w := s.wait("c", t0, 10*time.Minute, t0.Add(4*time.Minute)); w != 6*time.Minute {
		t.Errorf("first check in %s, want 6m", w)
	}
	if w := s.wait("c", t0, 10*time.Minute, t0.Add(11*time.Minute)); w > 0 {
		t.Errorf("due check waits %s", w)
	}
	s.scanned("c", t0.Add(11*time.Minute))
	if w := s.wait("c", t0, 10*time.Minute, t0.Add(12*time.Minute)); w != 9*time.Minute {
		t.Errorf("next check in %s, want 9m", w)
	}
	s.forget("c")
	if w := s.wait("c", t0, 10*time.Minute, t0.Add(12*time.Minute)); w > 0 {
		t.Errorf("a forgotten claim waits %s", w)
	}
}

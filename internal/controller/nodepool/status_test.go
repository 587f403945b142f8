package nodepool

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

func claimOf(name, node, cpu, mem string, registered bool) karpv1.NodeClaim {
	c := karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Status.NodeName = node
	c.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	if registered {
		c.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionTrue}}
	}
	return c
}

func TestDecide(t *testing.T) {
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 3}}
	bad := pool.DeepCopy()
	bad.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
		Key: "karpenter.k8s.aws/instance-cpu", Operator: corev1.NodeSelectorOpGt, Values: []string{"four"}}}}
	withGt := func(v string) *karpv1.NodePool {
		np := bad.DeepCopy()
		np.Spec.Template.Spec.Requirements[0].Values = []string{v}
		return np
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("3900m"), corev1.ResourceMemory: resource.MustParse("15Gi")}}}
	for _, tc := range []struct {
		name                             string
		np                               *karpv1.NodePool
		obs                              Observed
		nodes                            int64
		cpu, memory                      string
		ready, classReady, valid, health metav1.ConditionStatus
		readyMsg                         string
	}{
		{"empty, class ready", pool, Observed{}, 0, "0", "0", "True", "True", "True", "Unknown", ""},
		{"registered node counts its Node's capacity, launching one the claim's", pool, Observed{
			Claims: []karpv1.NodeClaim{claimOf("a", "n1", "4", "16Gi", true), claimOf("b", "", "2", "8Gi", false)},
			Nodes:  map[string]*corev1.Node{"n1": node}, Registrations: []Outcome{{NodeClaim: "a", Registered: true}}}, 2, "5900m", "23Gi", "True", "True", "True", "True", ""},
		{"class not ready", pool, Observed{ClassErr: &cloudprovider.NodeClassNotReadyError{NodeClass: "c", Reason: "EC2NodeClass c does not exist"}},
			0, "0", "0", "False", "False", "True", "Unknown", "NodeClassReady=False"},
		{"class unknown", pool, Observed{ClassErr: errors.New("timeout")}, 0, "0", "0", "False", "Unknown", "True", "Unknown", "NodeClassReady=Unknown"},
		{"bad requirement", bad, Observed{}, 0, "0", "0", "False", "True", "False", "Unknown", "is not an integer"},
		{"requirement with trailing junk", withGt("4x"), Observed{}, 0, "0", "0", "False", "True", "False", "Unknown", `"4x" is not an integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Decide(tc.np, tc.obs)
			if *st.Nodes != tc.nodes {
				t.Errorf("nodes = %d, want %d", *st.Nodes, tc.nodes)
			}
			if got := st.Resources[corev1.ResourceCPU]; got.Cmp(resource.MustParse(tc.cpu)) != 0 {
				t.Errorf("cpu = %s, want %s", got.String(), tc.cpu)
			}
			if got := st.Resources[corev1.ResourceMemory]; got.Cmp(resource.MustParse(tc.memory)) != 0 {
				t.Errorf("memory = %s, want %s", got.String(), tc.memory)
			}
			for cond, want := range map[string]metav1.ConditionStatus{ConditionReady: tc.ready, ConditionNodeClassReady: tc.classReady,
				ConditionValidationSucceeded: tc.valid, ConditionNodeRegistrationHealthy: tc.health} {
				c := meta.FindStatusCondition(st.Conditions, cond)
				if c == nil || c.Status != want {
					t.Errorf("%s = %+v, want %s", cond, c, want)
				} else if c.ObservedGeneration != 3 {
					t.Errorf("%s observedGeneration %d, want 3", cond, c.ObservedGeneration)
				}
			}
			if ready := meta.FindStatusCondition(st.Conditions, ConditionReady); !strings.Contains(ready.Message, tc.readyMsg) {
				t.Errorf("Ready message %q lacks %q", ready.Message, tc.readyMsg)
			}
		})
	}
}

package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/solver"
)

// TestRoomApart: a drained pod the plan packed onto a ready node, but that
// kube-scheduler would strand, is planned away from the ready nodes: onto
// a starting node with room, else a new NodeClaim; the other placements
// stay as they were.
func TestRoomApart(t *testing.T) {
	cpu := func(name, node, q string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	node := func(name string, inFlight bool, pods ...*corev1.Pod) solver.Node {
		return solver.Node{Name: name, NodePool: "p", InFlight: inFlight, Allocatable: alloc, Pods: pods,
			Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}}
	}
	catalog := kwok.Build(kwok.BuiltinCatalog(), kwok.Options{VMMemoryOverheadPercent: instancetype.DefaultVMMemoryOverheadPercent})
	pool := solver.NodePool{Name: "p", Requirements: scheduling.NewRequirements(), InstanceTypes: catalog}
	for _, tc := range []struct {
		name     string
		starting bool // a starting node with room is there
		where    string
	}{
		{name: "no starting node: a new NodeClaim", where: "new"},
		{name: "a starting node has room", starting: true, where: "starting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &solver.Input{NodePools: []solver.NodePool{pool},
				Nodes: []solver.Node{node("a", false, cpu("on-a", "a", "800m")), node("b", false, cpu("on-b", "b", "1"))},
				Pods:  []*corev1.Pod{cpu("d1", "", "500m"), cpu("d2", "", "1100m"), cpu("other", "", "100m")}}
			if tc.starting {
				in.Nodes = append(in.Nodes, node("starting", true))
			}
			plan, err := solver.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			before := where(plan)
			if before["d2"] != "a" && before["d2"] != "b" {
				t.Fatalf("the packed plan put d2 on %q, not a ready node: the case tests nothing", before["d2"])
			}
			got, err := roomApart(in, plan, map[types.UID]bool{"d2": true})
			if err != nil {
				t.Fatal(err)
			}
			after := where(got)
			switch tc.where {
			case "new":
				if after["d2"] != "new" || len(got.NewClaims) != len(plan.NewClaims)+1 {
					t.Errorf("d2 on %q with %d new claims (%d before), want a new NodeClaim of its own", after["d2"], len(got.NewClaims), len(plan.NewClaims))
				}
			case "starting":
				if after["d2"] != "starting" || len(got.NewClaims) != len(plan.NewClaims) {
					t.Errorf("d2 on %q with %d new claims (%d before), want the starting node", after["d2"], len(got.NewClaims), len(plan.NewClaims))
				}
			}
			for pod, n := range before {
				if pod != "d2" && after[pod] != n {
					t.Errorf("%s moved from %s to %s", pod, n, after[pod])
				}
			}
			if len(got.Placements) != len(plan.Placements) {
				t.Errorf("%d placements, want %d", len(got.Placements), len(plan.Placements))
			}
		})
	}
}

// where maps each placed pod to its node, or "new" for a new NodeClaim
// (checking the index is one).
func where(plan *solver.Plan) map[string]string {
	out := map[string]string{}
	for _, pl := range plan.Placements {
		if pl.NewClaim >= 0 && pl.NewClaim < len(plan.NewClaims) {
			out[pl.Pod.Name] = "new"
		} else {
			out[pl.Pod.Name] = pl.Node
		}
	}
	return out
}

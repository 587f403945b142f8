package solver_test

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/plancheck"
	"github.com/nodewright/nodewright/internal/solver"
	"github.com/nodewright/nodewright/internal/workload"
)

// linearTypes are types of the given vCPUs with 2 GiB per vCPU, priced per
// vCPU, each keeping reserved back from pods: with a fixed reserve per node,
// larger nodes hold more pods per dollar, as real ones do.
func linearTypes(reserved string, cpus ...int64) []*instancetype.InstanceType {
	var out []*instancetype.InstanceType
	for _, cpu := range cpus {
		name := fmt.Sprintf("linear-%d", cpu)
		offerings := instancetype.Offerings{{Zone: workload.Zones[0], CapacityType: "on-demand", Price: 0.05 * float64(cpu), Available: true}}
		it := &instancetype.InstanceType{
			Name:         name,
			Requirements: workload.Requirements(name, "amd64", offerings),
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(cpu*2<<30, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
			},
			Offerings: offerings,
		}
		if reserved != "" {
			it.Overhead.KubeReserved = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(reserved)}
		}
		out = append(out, it)
	}
	return out
}

// TestNewNodeSizing: a new NodeClaim is sized for the pods still waiting,
// not for the one pod that opened it.
func TestNewNodeSizing(t *testing.T) {
	antiAffine := withAntiAffinity(corev1.LabelHostname, map[string]string{"app": "solo"})
	cases := []struct {
		name     string
		reserved string
		cpus     []int64 // the types' vCPUs; 2, 8 and 32 when empty
		pods     []*corev1.Pod
		// want is how many claims launch as each type, and the plan's price.
		want     map[string]int
		wantCost float64
	}{
		{
			// Pod by pod, a 2-vCPU node (1 pod, $0.10) is always cheaper
			// than growing one: 60 of them cost $6.00. A 32-vCPU node holds
			// 31 pods at $0.052 each.
			name: "a burst fills large nodes", reserved: "100m",
			pods: pods(60, "p", "1", "1Gi"),
			want: map[string]int{"linear-32": 2}, wantCost: 3.20,
		},
		{
			// 3 pods: three 2-vCPU nodes ($0.30) beat one 8-vCPU node ($0.40).
			name: "a few pods get nodes their size", reserved: "100m",
			pods: pods(3, "p", "1", "1Gi"),
			want: map[string]int{"linear-2": 3}, wantCost: 0.30,
		},
		{
			// Without a reserve every size costs $0.05 a pod: the node that
			// takes the most of them wins the tie.
			name: "at the same price per pod, fewer nodes",
			pods: pods(8, "p", "1", "2Gi"),
			want: map[string]int{"linear-8": 1}, wantCost: 0.40,
		},
		{
			// One per node: each solo pod's node is priced for one pod
			// (linear-2, room for one small pod beside it); the other 32
			// small pods go 15, 15 and 2.
			name: "pods that cannot share a node", reserved: "100m",
			pods: append(pods(4, "solo", "1", "1Gi", withLabels("app", "solo"), antiAffine), pods(36, "small", "500m", "512Mi")...),
			want: map[string]int{"linear-2": 5, "linear-8": 2}, wantCost: 1.30,
		},
		{
			// Three pods fill a 2-vCPU node; the fourth costs $0.10 either
			// way, growing it to 4 vCPUs or starting another: the node
			// holds only its own group's pods, so it grows.
			name: "at the same price, a group's own node grows", reserved: "100m", cpus: []int64{2, 4},
			pods: pods(4, "web", "500m", "512Mi"),
			want: map[string]int{"linear-4": 1}, wantCost: 0.20,
		},
		{
			// The same, but the fourth pod is of another group: a node of
			// its own keeps the groups apart at the same price.
			name: "at the same price, another group's node does not", reserved: "100m", cpus: []int64{2, 4},
			pods: append(pods(3, "a", "500m", "512Mi", withLabels("app", "a")), pods(1, "b", "500m", "512Mi", withLabels("app", "b"))...),
			want: map[string]int{"linear-2": 2}, wantCost: 0.20,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cpus := tc.cpus
			if len(cpus) == 0 {
				cpus = []int64{2, 8, 32}
			}
			types := linearTypes(tc.reserved, cpus...)
			in := &solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) { np.InstanceTypes = types })}, Pods: tc.pods}
			plan, err := solver.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			allPlaced(t, plan)
			if vs := plancheck.Check(in, plan); len(vs) > 0 {
				t.Fatalf("plan breaks constraints: %v", vs)
			}
			got := map[string]int{}
			for _, c := range plan.NewClaims {
				got[c.InstanceTypes[0].Name]++
				// What launches is the cheapest type that holds the claim.
				for _, it := range types {
					if fitsAll(c.Requests, it.Allocatable()) {
						if it != c.InstanceTypes[0] {
							t.Errorf("claim %s launches as %s, but %s holds its requests %v", c.Hostname, c.InstanceTypes[0].Name, it.Name, c.Requests)
						}
						break
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("claims by type: got %v, want %v", got, tc.want)
			}
			if math.Abs(plan.Cost()-tc.wantCost) > 1e-9 {
				t.Errorf("cost: got $%.4f/h, want $%.4f/h", plan.Cost(), tc.wantCost)
			}
		})
	}
}

func fitsAll(need, have corev1.ResourceList) bool {
	for n, q := range need {
		h, ok := have[n]
		if !ok || q.Cmp(h) > 0 {
			return false
		}
	}
	return true
}

// TestNewClaimAimAndShort: each NewClaim names the type it was sized for,
// how full its pods make it, and whether it was sized for fewer pods of its
// kind than that type holds (the last claim of a burst).
func TestNewClaimAimAndShort(t *testing.T) {
	antiAffine := withAntiAffinity(corev1.LabelHostname, map[string]string{"app": "solo"})
	type claim struct {
		aim   string
		short bool
		fill  float64 // to two decimals
	}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want []claim
	}{
		{
			// 31 pods fill the first 32-vCPU node (31.9 allocatable); the
			// 29 left are sized onto another, which more pods would fill.
			name: "a burst's last node is short", pods: pods(60, "p", "1", "1Gi"),
			want: []claim{{"linear-32", false, 0.97}, {"linear-32", true, 0.91}},
		},
		{
			// 7 pods fill an 8-vCPU node, but a 32-vCPU one holds 31 for
			// less a pod: more pods would have been given that one.
			name: "a node sized small for few pods is short", pods: pods(7, "p", "1", "1Gi"),
			want: []claim{{"linear-8", true, 0.89}},
		},
		{
			// One pod a node, whatever is left: never short.
			name: "pods that cannot share a node",
			pods: pods(2, "solo", "1", "1Gi", withLabels("app", "solo"), antiAffine),
			want: []claim{{"linear-2", false, 0.53}, {"linear-2", false, 0.53}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &solver.Input{NodePools: []solver.NodePool{defaultPool(func(np *solver.NodePool) { np.InstanceTypes = linearTypes("100m", 2, 8, 32) })}, Pods: tc.pods}
			plan, err := solver.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			allPlaced(t, plan)
			var got []claim
			for _, c := range plan.NewClaims {
				aim := "none"
				if c.Aim != nil {
					aim = c.Aim.Name
				}
				got = append(got, claim{aim, c.Short, math.Round(c.Fill()*100) / 100})
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("claims (aim, short, fill): got %v, want %v", got, tc.want)
			}
		})
	}
}

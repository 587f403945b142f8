package plancheck_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/plancheck"
	"github.com/nodewright/nodewright/internal/solver"
)

type checkCase struct {
	name string
	// build returns the input and the plan to check.
	build func() (*solver.Input, *solver.Plan)
	// want is the one constraint every violation must name; "" wants none.
	want string
}

// existingCase places pods, in order, on existing nodes.
func existingCase(nodes []solver.Node, ps []*corev1.Pod, on ...string) func() (*solver.Input, *solver.Plan) {
	return func() (*solver.Input, *solver.Plan) {
		return &solver.Input{Nodes: nodes, Pods: ps}, onNodes(ps, on...)
	}
}

var smallTypes = []*instancetype.InstanceType{itype("c2", 2, "z1"), itype("c4", 4, "z1")}

// claimCase puts pods on one new claim of a pool with smallTypes.
func claimCase(pool solver.NodePool, dss []*appsv1.DaemonSet, dsReq corev1.ResourceList, ps ...*corev1.Pod) func() (*solver.Input, *solver.Plan) {
	return func() (*solver.Input, *solver.Plan) {
		if pool.InstanceTypes == nil {
			pool.InstanceTypes = smallTypes
		}
		plan := &solver.Plan{NewClaims: []*solver.NewClaim{newClaim(pool, "new-0", dsReq, pool.InstanceTypes, ps...)}}
		onClaim(plan, 0, ps...)
		return &solver.Input{NodePools: []solver.NodePool{pool}, DaemonSets: dss, Pods: ps}, plan
	}
}

func daemonSet(name, cpu string, tolerations ...corev1.Toleration) *appsv1.DaemonSet {
	p := pod("tmpl", cpu)
	p.Spec.Tolerations = tolerations
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
		Spec:       appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"ds": name}}, Spec: p.Spec}},
	}
}

func TestCheck(t *testing.T) {
	taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	cases := []checkCase{
		{
			name: "valid/existing nodes",
			build: func() (*solver.Input, *solver.Plan) {
				nodes := threeZones()
				nodes[2].Taints = []corev1.Taint{taint}
				ps := []*corev1.Pod{
					pod("db", "1", withLabels("app", "db")),
					pod("web-0", "1", withLabels("app", "web"), withPodAffinity(term(zoneKey, "app", "db")), withPodAntiAffinity(term(hostKey, "app", "web")), withHostPort(80, "")),
					pod("web-1", "1", withLabels("app", "web"), withSpread(zoneKey, 1, nil, "app", "web"), withHostPort(80, "")),
					pod("gpu", "1", withToleration("dedicated", corev1.TaintEffectNoSchedule), withNodeSelector(zoneKey, "z3")),
					pod("web-2", "1", withLabels("app", "web"), withSpread(zoneKey, 1, nil, "app", "web"), withToleration("dedicated", "")),
				}
				return &solver.Input{Nodes: nodes, Pods: ps}, onNodes(ps, "n1", "n1", "n2", "n3", "n3")
			},
		},
		{
			name:  "valid/claim with DaemonSet",
			build: claimCase(solver.NodePool{Name: "default"}, []*appsv1.DaemonSet{daemonSet("logs", "500m")}, resources("500m", "100Mi", 1), pods(2, "p", "500m")...),
		},
		{
			name: "valid/first pod of a self-affine group",
			build: existingCase(threeZones(), []*corev1.Pod{
				pod("a-0", "1", withLabels("app", "a"), withPodAffinity(term(zoneKey, "app", "a"))),
				pod("a-1", "1", withLabels("app", "a"), withPodAffinity(term(zoneKey, "app", "a"))),
			}, "n2", "n2"),
		},
		{
			name: "valid/in-flight node's startup and ephemeral taints, PreferNoSchedule",
			build: func() (*solver.Input, *solver.Plan) {
				n := existing("n1", "z1")
				n.InFlight = true
				n.StartupTaints = []corev1.Taint{{Key: "cni-not-ready", Effect: corev1.TaintEffectNoSchedule}}
				n.Taints = []corev1.Taint{n.StartupTaints[0], {Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}, {Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
				ps := []*corev1.Pod{pod("p", "1")}
				return &solver.Input{Nodes: []solver.Node{n}, Pods: ps}, onNodes(ps, "n1")
			},
		},
		{
			name: "valid/host ports on distinct addresses",
			build: existingCase(threeZones(), []*corev1.Pod{
				pod("a", "1", withHostPort(80, "10.0.0.1")), pod("b", "1", withHostPort(80, "10.0.0.2")),
			}, "n1", "n1"),
		},
		{
			name: "valid/spread ignores domains the pod's node affinity excludes",
			build: existingCase(threeZones(), pods(3, "s", "1", withLabels("app", "s"), withSpread(zoneKey, 1, nil, "app", "s"),
				withRequiredNodeAffinity(zoneKey, corev1.NodeSelectorOpIn, "z1", "z2")), "n1", "n2", "n1"),
		},
		{
			name: "valid/unschedulable pod",
			build: func() (*solver.Input, *solver.Plan) {
				p := pod("big", "100")
				return &solver.Input{Nodes: threeZones(), Pods: []*corev1.Pod{p}}, &solver.Plan{Unschedulable: []solver.Unschedulable{{Pod: p}}}
			},
		},
		{
			name:  "resources/cpu",
			build: existingCase(threeZones(), []*corev1.Pod{pod("a", "3"), pod("b", "2")}, "n1", "n1"),
			want:  "resources",
		},
		{
			name: "resources/pods",
			build: func() (*solver.Input, *solver.Plan) {
				n := existing("n1", "z1", pod("old", "100m"))
				n.Allocatable = resources("4", "8Gi", 1)
				ps := []*corev1.Pod{pod("p", "100m")}
				return &solver.Input{Nodes: []solver.Node{n}, Pods: ps}, onNodes(ps, "n1")
			},
			want: "resources",
		},
		{
			name: "resources/extended resource the node lacks",
			build: func() (*solver.Input, *solver.Plan) {
				p := pod("gpu", "1")
				p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
				return &solver.Input{Nodes: threeZones(), Pods: []*corev1.Pod{p}}, onNodes([]*corev1.Pod{p}, "n1")
			},
			want: "resources",
		},
		{
			// The claim says no DaemonSet runs there, but one does and takes
			// the room: c2 has 2 CPUs allocatable, 1600m + 500m do not fit.
			name: "resources/DaemonSet not reserved on a new node",
			build: claimCase(solver.NodePool{Name: "default", InstanceTypes: []*instancetype.InstanceType{itype("c2", 2, "z1")}},
				[]*appsv1.DaemonSet{daemonSet("logs", "500m")}, nil, pod("p", "1600m")),
			want: "resources",
		},
		{
			name: "taints",
			build: func() (*solver.Input, *solver.Plan) {
				nodes := threeZones()
				nodes[0].Taints = []corev1.Taint{taint}
				ps := []*corev1.Pod{pod("p", "1", withToleration("other", ""))}
				return &solver.Input{Nodes: nodes, Pods: ps}, onNodes(ps, "n1")
			},
			want: "taints",
		},
		{
			name:  "taints/pool taint on a new node",
			build: claimCase(solver.NodePool{Name: "default", Taints: []corev1.Taint{taint}}, nil, nil, pod("p", "1")),
			want:  "taints",
		},
		{
			name:  "node-affinity/nodeSelector",
			build: existingCase(threeZones(), []*corev1.Pod{pod("p", "1", withNodeSelector(zoneKey, "z2"))}, "n1"),
			want:  "node-affinity",
		},
		{
			name:  "node-affinity/required NotIn",
			build: existingCase(threeZones(), []*corev1.Pod{pod("p", "1", withRequiredNodeAffinity(zoneKey, corev1.NodeSelectorOpNotIn, "z3"))}, "n3"),
			want:  "node-affinity",
		},
		{
			name:  "host-ports",
			build: existingCase(threeZones(), []*corev1.Pod{pod("a", "1", withHostPort(80, "")), pod("b", "1", withHostPort(80, "10.0.0.2"))}, "n1", "n1"),
			want:  "host-ports",
		},
		{
			name: "volume/bound PersistentVolume in another zone",
			build: func() (*solver.Input, *solver.Plan) {
				ps := []*corev1.Pod{pod("p", "1", withPVC("data"))}
				in := &solver.Input{Nodes: threeZones(), Pods: ps, Volumes: solver.Volumes{
					PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}},
					PersistentVolumes: []*corev1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{
						Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: zoneKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"z2"}}}}}},
					}}}},
				}}
				return in, onNodes(ps, "n1")
			},
			want: "volume",
		},
		{
			name: "volume/WaitForFirstConsumer outside allowedTopologies",
			build: func() (*solver.Input, *solver.Plan) {
				ps := []*corev1.Pod{pod("p", "1", withPVC("data"))}
				in := &solver.Input{Nodes: threeZones(), Pods: ps, Volumes: solver.Volumes{
					PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr("zonal")}}},
					StorageClasses: []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "zonal"}, VolumeBindingMode: &wffc, AllowedTopologies: []corev1.TopologySelectorTerm{
						{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: zoneKey, Values: []string{"z2", "z3"}}}},
					}}},
				}}
				return in, onNodes(ps, "n1")
			},
			want: "volume",
		},
		{
			name: "pod-affinity",
			build: existingCase(threeZones(), []*corev1.Pod{
				pod("db", "1", withLabels("app", "db")),
				pod("web", "1", withPodAffinity(term(zoneKey, "app", "db"))),
			}, "n2", "n1"),
			want: "pod-affinity",
		},
		{
			name: "pod-affinity/second self-affine pod elsewhere",
			build: existingCase(threeZones(), []*corev1.Pod{
				pod("a-0", "1", withLabels("app", "a"), withPodAffinity(term(zoneKey, "app", "a"))),
				pod("a-1", "1", withLabels("app", "a"), withPodAffinity(term(zoneKey, "app", "a"))),
			}, "n1", "n2"),
			want: "pod-affinity",
		},
		{
			name: "pod-anti-affinity",
			build: existingCase(threeZones(), []*corev1.Pod{
				pod("web-0", "1", withLabels("app", "web")),
				pod("web-1", "1", withLabels("app", "web"), withPodAntiAffinity(term(zoneKey, "app", "web"))),
			}, "n1", "n1"),
			want: "pod-anti-affinity",
		},
		{
			name: "pod-anti-affinity/symmetry with an existing pod",
			build: func() (*solver.Input, *solver.Plan) {
				nodes := threeZones()
				nodes[1].Pods = []*corev1.Pod{pod("loner", "1", withPodAntiAffinity(term(hostKey, "app", "web")))}
				ps := []*corev1.Pod{pod("web", "1", withLabels("app", "web"))}
				return &solver.Input{Nodes: nodes, Pods: ps}, onNodes(ps, "n2")
			},
			want: "pod-anti-affinity",
		},
		{
			name: "pod-anti-affinity/namespaceSelector reaches a labeled namespace",
			build: func() (*solver.Input, *solver.Plan) {
				t := term(hostKey, "app", "db")
				t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}}
				db := pod("db", "1", withLabels("app", "db"))
				db.Namespace = "data"
				ps := []*corev1.Pod{db, pod("web", "1", withPodAntiAffinity(t))}
				in := &solver.Input{Nodes: threeZones(), Pods: ps, Namespaces: []*corev1.Namespace{
					{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"team": "data"}}},
				}}
				return in, onNodes(ps, "n1", "n1")
			},
			want: "pod-anti-affinity",
		},
		{
			name: "valid/namespaceSelector does not reach an unlabeled namespace",
			build: func() (*solver.Input, *solver.Plan) {
				t := term(hostKey, "app", "db")
				t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}}
				db := pod("db", "1", withLabels("app", "db"))
				db.Namespace = "data"
				ps := []*corev1.Pod{db, pod("web", "1", withPodAntiAffinity(t))}
				return &solver.Input{Nodes: threeZones(), Pods: ps}, onNodes(ps, "n1", "n1")
			},
		},
		{
			name:  "topology-spread",
			build: existingCase(threeZones(), pods(3, "s", "1", withLabels("app", "s"), withSpread(zoneKey, 1, nil, "app", "s")), "n1", "n2", "n2"),
			want:  "topology-spread",
		},
		{
			name: "topology-spread/node affinity policy Ignore counts the excluded zone",
			build: func() (*solver.Input, *solver.Plan) {
				ps := pods(3, "s", "1", withLabels("app", "s"), withSpread(zoneKey, 1, nil, "app", "s"), withRequiredNodeAffinity(zoneKey, corev1.NodeSelectorOpIn, "z1", "z2"))
				for _, p := range ps {
					p.Spec.TopologySpreadConstraints[0].NodeAffinityPolicy = ptr(corev1.NodeInclusionPolicyIgnore)
				}
				return &solver.Input{Nodes: threeZones(), Pods: ps}, onNodes(ps, "n1", "n2", "n1")
			},
			want: "topology-spread",
		},
		{
			name: "topology-spread/minDomains",
			build: existingCase([]solver.Node{existing("n1", "z1"), existing("n2", "z2")},
				pods(3, "s", "1", withLabels("app", "s"), withSpread(zoneKey, 1, ptr(int32(3)), "app", "s")), "n1", "n2", "n1"),
			want: "topology-spread",
		},
		{
			name: "valid/same placements without minDomains",
			build: existingCase([]solver.Node{existing("n1", "z1"), existing("n2", "z2")},
				pods(3, "s", "1", withLabels("app", "s"), withSpread(zoneKey, 1, nil, "app", "s")), "n1", "n2", "n1"),
		},
		{
			name: "plan/pod missing",
			build: func() (*solver.Input, *solver.Plan) {
				ps := []*corev1.Pod{pod("a", "1"), pod("b", "1")}
				return &solver.Input{Nodes: threeZones(), Pods: ps}, onNodes(ps[:1], "n1")
			},
			want: "plan",
		},
		{
			name: "plan/pod placed and unschedulable",
			build: func() (*solver.Input, *solver.Plan) {
				ps := []*corev1.Pod{pod("a", "1")}
				plan := onNodes(ps, "n1")
				plan.Unschedulable = []solver.Unschedulable{{Pod: ps[0]}}
				return &solver.Input{Nodes: threeZones(), Pods: ps}, plan
			},
			want: "plan",
		},
		{
			name:  "plan/unknown node",
			build: existingCase(threeZones(), []*corev1.Pod{pod("a", "1")}, "n9"),
			want:  "plan",
		},
		{
			name: "plan/deleting node",
			build: func() (*solver.Input, *solver.Plan) {
				nodes := threeZones()
				nodes[0].Deleting = true
				ps := []*corev1.Pod{pod("a", "1")}
				return &solver.Input{Nodes: nodes, Pods: ps}, onNodes(ps, "n1")
			},
			want: "plan",
		},
		{
			name: "plan/claim index out of range",
			build: func() (*solver.Input, *solver.Plan) {
				ps := []*corev1.Pod{pod("a", "1")}
				plan := &solver.Plan{}
				onClaim(plan, 3, ps...)
				return &solver.Input{Nodes: threeZones(), Pods: ps}, plan
			},
			want: "plan",
		},
		{
			name: "plan/claim requests do not add up",
			build: func() (*solver.Input, *solver.Plan) {
				in, plan := claimCase(solver.NodePool{Name: "default"}, nil, nil, pod("a", "1"))()
				plan.NewClaims[0].Requests[corev1.ResourceCPU] = resource.MustParse("500m")
				return in, plan
			},
			want: "plan",
		},
		{
			name: "plan/claim pods differ from placements",
			build: func() (*solver.Input, *solver.Plan) {
				ps := []*corev1.Pod{pod("a", "1"), pod("b", "1")}
				in, plan := claimCase(solver.NodePool{Name: "default"}, nil, nil, ps...)()
				plan.NewClaims[0].Pods = []*corev1.Pod{ps[1], ps[0]}
				return in, plan
			},
			want: "plan",
		},
		{
			name: "plan/instance type too small for the claim",
			build: func() (*solver.Input, *solver.Plan) {
				pool := solver.NodePool{Name: "default", InstanceTypes: smallTypes}
				in, plan := claimCase(pool, nil, nil, pod("a", "1500m"))()
				// With 1500m more of DaemonSets, c2's 2 CPUs cannot hold the claim.
				c := plan.NewClaims[0]
				c.Requests[corev1.ResourceCPU] = resource.MustParse("3")
				c.DaemonSetRequests = resources("1500m", "", 0)
				return in, plan
			},
			want: "plan",
		},
		{
			name: "plan/unknown NodePool",
			build: func() (*solver.Input, *solver.Plan) {
				in, plan := claimCase(solver.NodePool{Name: "default"}, nil, nil, pod("a", "1"))()
				in.NodePools[0].Name = "other"
				return in, plan
			},
			want: "plan",
		},
		{
			// The claim launches c2: usage 2 + 2 CPUs ≤ 4.
			name: "valid/within limits",
			build: func() (*solver.Input, *solver.Plan) {
				pool := solver.NodePool{Name: "default", Limits: resources("4", "", 0), Usage: resources("2", "", 0)}
				return claimCase(pool, nil, nil, pod("a", "1"))()
			},
		},
		{
			name: "limits/cpu exceeded",
			build: func() (*solver.Input, *solver.Plan) {
				pool := solver.NodePool{Name: "default", Limits: resources("3", "", 0), Usage: resources("2", "", 0)}
				return claimCase(pool, nil, nil, pod("a", "1"))()
			},
			want: "limits",
		},
		{
			name: "limits/nodes exceeded",
			build: func() (*solver.Input, *solver.Plan) {
				pool := solver.NodePool{Name: "default", Limits: corev1.ResourceList{"nodes": resource.MustParse("1")}, Usage: corev1.ResourceList{"nodes": resource.MustParse("1")}}
				return claimCase(pool, nil, nil, pod("a", "1"))()
			},
			want: "limits",
		},
	}
	runCheckCases(t, cases)
}

// runCheckCases checks each case's plan and compares the violations with
// what the case wants.
func runCheckCases(t *testing.T, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, plan := tc.build()
			vs := plancheck.Check(in, plan)
			if tc.want == "" {
				if vs != nil {
					t.Fatalf("want no violations, got:\n%s", join(vs))
				}
				return
			}
			if len(vs) == 0 {
				t.Fatalf("want a %q violation, got none", tc.want)
			}
			for _, v := range vs {
				if v.Constraint != tc.want {
					t.Fatalf("want only %q violations, got:\n%s", tc.want, join(vs))
				}
			}
			t.Logf("%s", join(vs))
		})
	}
}

func join(vs []plancheck.Violation) string {
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = v.String()
	}
	return strings.Join(lines, "\n")
}

// TestCheckTruncates: a plan that forgets 1,500 pods reports 999 of them and
// says how many more there were.
func TestCheckTruncates(t *testing.T) {
	in := &solver.Input{Pods: pods(1500, "p", "1")}
	vs := plancheck.Check(in, &solver.Plan{})
	if len(vs) != 1000 {
		t.Fatalf("got %d violations, want 1000", len(vs))
	}
	last := vs[len(vs)-1]
	if last.Constraint != "truncated" || !strings.Contains(last.Detail, "501 more") {
		t.Fatalf("last violation = %s, want a truncation note for 501 more", last)
	}
	if !slices.IsSortedFunc(vs[:999], func(a, b plancheck.Violation) int { return strings.Compare(a.Pod, b.Pod) }) {
		t.Errorf("violations are not sorted by pod")
	}
}

func TestViolationString(t *testing.T) {
	v := plancheck.Violation{Pod: "default/a", Node: "n1", Constraint: "taints", Detail: "taint x:NoSchedule is not tolerated"}
	if got, want := v.String(), "[taints] pod default/a on node n1: taint x:NoSchedule is not tolerated"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

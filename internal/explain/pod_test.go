package explain

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// TestPodExplanations renders explain pod on small clusters and compares
// the text with testdata/pod-*.golden.
func TestPodExplanations(t *testing.T) {
	memoryPool := pool("memory", onlyTypes("r5a.8xlarge"))
	taintedPool := pool("gpu", func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}}
	})
	cases := []struct {
		name  string
		build func(s *sources)
		pod   string
		// want must appear in the output, so that a golden file rewritten
		// with -update cannot silently lose the point of the case.
		want string
	}{
		{"pod-240gi-does-not-fit", func(s *sources) {
			s.Cluster.NodePools = append(s.Cluster.NodePools, memoryPool, taintedPool)
			s.daemonSet("node-agent", "200Mi")
			s.pod("big", "big", "", "1", "240Gi", nil)
		}, "big", "memory: pod 245760Mi + DaemonSets 200Mi = 245960Mi > allocatable: 262144Mi - 19661Mi (7.5%)"},
		{"pod-240gi-with-overlay", func(s *sources) {
			s.Cluster.NodePools = append(s.Cluster.NodePools, memoryPool)
			s.Overlays = append(s.Overlays, overlay("r5a-real-memory", "r5a.8xlarge", "256Gi"))
			s.daemonSet("node-agent", "200Mi")
			s.pod("big", "big", "", "1", "240Gi", nil)
		}, "big", "Decision: launch a NodeClaim of NodePool memory"},
		{"pod-goes-to-existing-node", func(s *sources) {
			general := pool("general")
			s.Cluster.NodePools = append(s.Cluster.NodePools, general)
			s.node("node-small", general, "m5.large", 0)
			s.node("node-large", general, "m5.2xlarge", 0)
			s.pod("web", "web", "", "3", "4Gi", nil)
		}, "web", "Decision: goes to existing node node-large"},
		{"pod-bound", func(s *sources) {
			general := pool("general", onlyTypes("m5.large", "m5.xlarge"))
			s.Cluster.NodePools = append(s.Cluster.NodePools, general)
			s.node("node-a", general, "m5.xlarge", 0)
			s.pod("web", "web", "node-a", "3", "4Gi", nil)
		}, "web", "Decision if it were pending now: goes to existing node node-a"},
		{"pod-nominated-to-in-flight-claim", func(s *sources) {
			general := pool("general", onlyTypes("m5.large", "m5.xlarge"))
			s.Cluster.NodePools = append(s.Cluster.NodePools, general)
			nc, _ := s.node("claim-a", general, "m5.xlarge", 0)
			// Launched, its node not there yet.
			s.Cluster.Nodes = nil
			nc.Status.NodeName = ""
			nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: "True", LastTransitionTime: metav1.NewTime(now)}}
			nc.Annotations[snapshot.NominatedPodsAnnotation] = "web"
			s.pod("web", "web", "", "3", "4Gi", nil)
		}, "web", "Decision: wait for NodeClaim claim-a, launched for it"},
		{"pod-bound-within-the-nomination-grace", func(s *sources) {
			general := pool("general", onlyTypes("m5.large", "m5.xlarge"))
			s.Cluster.NodePools = append(s.Cluster.NodePools, general)
			nc, _ := s.node("node-a", general, "m5.xlarge", 0)
			// Initialized seconds ago: the claim still lists the pod it was
			// launched for.
			nc.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Second))
			nc.Annotations[snapshot.NominatedPodsAnnotation] = "web"
			s.pod("web", "web", "node-a", "3", "4Gi", nil)
		}, "web", "Decision if it were pending now: goes to existing node node-a"},
		{"pod-only-a-static-pool-matches", func(s *sources) {
			static := pool("static", onlyTypes("m5.large"), func(np *karpv1.NodePool) { np.Spec.Replicas = ptr(int64(1)) })
			s.Cluster.NodePools = append(s.Cluster.NodePools, static)
			s.node("node-a", static, "m5.large", 0)
			s.pod("big", "big", "", "4", "4Gi", nil)
		}, "big", "NodePool static is static (spec.replicas): it keeps its replicas and launches no node for pending pods"},
		{"pod-nodepool-requirement-matches-no-type", func(s *sources) {
			// A typo in the NodePool: the reason names the requirement and
			// the spelling the catalog has.
			s.Cluster.NodePools = append(s.Cluster.NodePools, pool("general", onlyTypes("m5.xlarg")))
			s.pod("web", "web", "", "1", "1Gi", nil)
		}, "web", "NodePool general: node.kubernetes.io/instance-type In [m5.xlarg] matches no instance type: did you mean m5.xlarge?"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &sources{}
			tc.build(s)
			ex, err := Pod(s.input(t), "default", tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := ex.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, b.String())
			}
			golden(t, tc.name+".golden", b.Bytes())
		})
	}
}

func TestPodNotFoundSaysWhatToCheck(t *testing.T) {
	s := &sources{}
	_, err := Pod(s.input(t), "default", "nope")
	if err == nil || !strings.Contains(err.Error(), "default/nope") || !strings.Contains(err.Error(), "-n") {
		t.Errorf("got %v, want an error naming the pod and the -n flag", err)
	}
}

// TestNamePoolErrors: the solver's "no NodePool" (it was given none) names
// the NodePools left out as launching nothing; with none left out it stays.
func TestNamePoolErrors(t *testing.T) {
	bad := map[string]error{"b": errors.New("x"), "a": errors.New("y")}
	for _, tc := range []struct {
		name, reason string
		errs         map[string]error
		want         string
	}{
		{"alone", "unschedulable: no NodePool", bad, "unschedulable: no NodePool can launch a node (a, b: launches nothing, see below)"},
		{"after existing nodes", "unschedulable: no existing node fits (1 refused: taint); no NodePool", bad,
			"unschedulable: no existing node fits (1 refused: taint); no NodePool can launch a node (a, b: launches nothing, see below)"},
		{"no NodePool left out", "unschedulable: no NodePool", nil, "unschedulable: no NodePool"},
		{"NodePools judged", "unschedulable: NodePool gpu: limit reached: nodes", bad, "unschedulable: NodePool gpu: limit reached: nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := namePoolErrors(tc.reason, tc.errs); got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestPodNotFound: a workload's name or a pod in another namespace gets the
// pods meant (explain pod storefront said only "not found" while the
// expanded pods are storefront-sim-0 and on).
func TestPodNotFound(t *testing.T) {
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	pods := []*corev1.Pod{pod("shop", "storefront-sim-1"), pod("shop", "storefront-sim-0"), pod("shop", "storefronts-0"),
		pod("shop", "web-sim-0"), pod("shop", "web-sim-1"), pod("shop", "web-sim-2"), pod("shop", "web-sim-3"), pod("other", "big")}
	for _, tc := range []struct{ name, ns, pod, want string }{
		{"a Deployment's pods", "shop", "storefront", "pod shop/storefront not found; the pods of that name's workload are storefront-sim-0, storefront-sim-1: explain one of them"},
		{"many", "shop", "web", "the pods of that name's workload are web-sim-0, web-sim-1, web-sim-2 and 1 more"},
		{"another namespace", "default", "big", "pod default/big not found; a pod of that name is in namespace other: pass -n"},
		{"nothing like it", "shop", "db", "pod shop/db not found; check the name and namespace (-n)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := podNotFound(pods, tc.ns, tc.pod); !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q\nwant it to say %q", err, tc.want)
			}
		})
	}
}

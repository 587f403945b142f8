package operator

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/learned"
)

// replica is one controller process of a leader-elected pair, run in this
// test process with its log lines kept.
type replica struct {
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	lines  []string
}

func startReplica(t *testing.T, namespace string) *replica {
	t.Helper()
	o := DefaultOptions()
	o.Config = cluster.Config
	o.Namespace = namespace
	o.LeaderElect = true
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 2*time.Second, 1500*time.Millisecond, 200*time.Millisecond
	o.MetricsAddr, o.ProbeAddr = "0", "0"
	o.Provisioning.BatchIdle, o.Provisioning.BatchMax = 200*time.Millisecond, 2*time.Second
	o.Provisioning.Resync = time.Second
	o.Disruption.Interval = time.Second
	o.SkipControllerNameValidation = true
	r := &replica{done: make(chan error, 1)}
	logger := funcr.New(func(prefix, args string) {
		r.mu.Lock()
		r.lines = append(r.lines, prefix+" "+args)
		r.mu.Unlock()
	}, funcr.Options{})
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), logger))
	r.cancel = cancel
	go func() { r.done <- Run(ctx, o) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *replica) logged(what string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lines {
		if strings.Contains(l, what) {
			return true
		}
	}
	return false
}

func (r *replica) stop(t *testing.T) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("replica stopped with error: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("replica did not stop within 30s")
	}
}

func leaseHolder(namespace string) (string, error) {
	var l coordinationv1.Lease
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "nodewright-leader"}, &l); err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// TestStandbyPlansWithWhatTheLeaderLearned: a standby started before the
// leader learned that c5.large nodes have one usable vCPU takes over and
// plans a pod of 1.5 vCPUs on a larger type, not on the catalog's c5.large.
// It would not if it kept the copy it read at start.
func TestStandbyPlansWithWhatTheLeaderLearned(t *testing.T) {
	const pool, ns = "failover", "nodewright-failover"
	setup(t, pool, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			karpv1.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
				Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large", "c5.xlarge"}}})
	})
	leader := startReplica(t, ns)
	var first string
	eventually(t, 30*time.Second, "the first replica to lead", func() (bool, error) {
		var err error
		first, err = leaseHolder(ns)
		return first != "", err
	})
	standby := startReplica(t, ns)
	eventually(t, 30*time.Second, "the standby to start", func() (bool, error) {
		return standby.logged("starting nodewright controller"), nil
	})
	// What the leader learns after the standby read the ConfigMap.
	if err := learned.NewStore(cluster.Client, ns).Record(context.Background(), "c5.large", "node-of-the-leader",
		corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if h, err := leaseHolder(ns); err != nil || h != first {
		t.Fatalf("lease holder %q, want the first replica's %q (%v)", h, first, err)
	}
	leader.stop(t)
	eventually(t, 30*time.Second, "the standby to take the lease", func() (bool, error) {
		h, err := leaseHolder(ns)
		return h != "" && h != first, err
	})
	pendingPods(t, pool, 1, "1500m")
	eventually(t, 30*time.Second, "a NodeClaim", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil || len(cs) == 0 {
			return false, err
		}
		for _, r := range cs[0].Spec.Requirements {
			if r.Key != corev1.LabelInstanceTypeStable {
				continue
			}
			for _, v := range r.Values {
				if v == "c5.large" {
					t.Fatalf("NodeClaim %s may launch c5.large, which the leader learned has 1 vCPU: %v", cs[0].Name, r.Values)
				}
			}
		}
		return true, nil
	})
}

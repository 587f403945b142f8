package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// podWatch follows the pods of some namespaces through a watch, so that
// short states between two polls are not missed.
type podWatch struct {
	mu sync.Mutex
	// leaving is when each pod (namespace/name) was first seen terminating
	// or deleted, in order.
	leaving []string
	left    map[string]time.Time
	// minAvailable is the fewest pods of app=web that were running and not
	// terminating at once, after the first time there were webWant of them.
	minAvailable int
	webWant      int
	web          map[string]bool
	started      bool
	stop         func()
}

func watchPods(t *testing.T, webWant int, namespaces ...string) *podWatch {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	w := &podWatch{left: map[string]time.Time{}, web: map[string]bool{}, webWant: webWant, minAvailable: webWant}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, ns := range namespaces {
		wi, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range wi.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				w.see(ev.Type, p)
			}
		}()
	}
	w.stop = func() { cancel(); wg.Wait() }
	t.Cleanup(w.stop)
	return w
}

func (w *podWatch) see(typ watch.EventType, p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	gone := typ == watch.Deleted || p.DeletionTimestamp != nil
	if gone {
		if _, seen := w.left[key]; !seen {
			w.left[key] = time.Now()
			w.leaving = append(w.leaving, key)
		}
	}
	if p.Labels["app"] != "web" {
		return
	}
	w.web[key] = !gone && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning
	n := 0
	for _, up := range w.web {
		if up {
			n++
		}
	}
	if n >= w.webWant {
		w.started = true
	}
	if w.started && n < w.minAvailable {
		w.minAvailable = n
	}
}

// TestDrainOrderAndPDB: a drifted node is drained through the Eviction API
// in Karpenter's order (workload pods, then DaemonSet pods, then critical
// pods) and never takes a Deployment below what its PodDisruptionBudget
// allows.
func TestDrainOrderAndPDB(t *testing.T) {
	t.Parallel()
	const pool, ns = "drain", "e2e-drain"
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) { np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}} })
	namespace(t, ns)
	sel := map[string]string{karpv1.NodePoolLabelKey: pool}
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	ctx := context.Background()
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if err := kc.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				NodeSelector: sel, TerminationGracePeriodSeconds: ptr(int64(0)),
				Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: small}}}}}}}
	if err := kc.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	critical := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "critical"},
		Spec: corev1.PodSpec{NodeSelector: sel, PriorityClassName: "system-cluster-critical", TerminationGracePeriodSeconds: ptr(int64(0)),
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: small}}}}}
	if err := kc.Create(ctx, critical); err != nil {
		t.Fatal(err)
	}
	deployment(t, ns, "web", 4, sel, podShape{cpu: "500m", memory: "256Mi"})
	eventually(t, 4*time.Minute, "the workload, the critical pod and a DaemonSet pod to run on one node", func() (bool, error) {
		nodes, err := nodesOf(pool)
		running, other, _ := podCounts(ns)
		return err == nil && len(nodes) == 1 && running == 6 && other == 0, errorf("%d nodes, %d pods running, %d not", len(nodes), running, other)
	})
	w := watchPods(t, 4, ns)
	patchPool(t, pool, func(np *karpv1.NodePool) { np.Spec.Template.Labels = map[string]string{"release": "two"} })
	eventually(t, 4*time.Minute, "the old node to be drained and gone", func() (bool, error) {
		nodes, err := nodesOf(pool)
		if err != nil {
			return false, err
		}
		w.mu.Lock()
		_, criticalLeft := w.left[ns+"/critical"]
		w.mu.Unlock()
		return len(nodes) == 1 && nodes[0].Labels["release"] == "two" && criticalLeft, errorf("%d nodes, the critical pod left: %v", len(nodes), criticalLeft)
	})
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("pods left the old node in this order: %v; at least %d of 4 web pods ran at all times", w.leaving, w.minAvailable)
	if w.minAvailable < 3 {
		t.Errorf("only %d web pods were available at one point; the PodDisruptionBudget asks for 3", w.minAvailable)
	}
	wave := func(key string) int {
		switch {
		case key == ns+"/critical":
			return 2
		case len(key) > len(ns)+7 && key[:len(ns)+7] == ns+"/agent-":
			return 1
		}
		return 0
	}
	last := 0
	for _, key := range w.leaving {
		if wave(key) < last {
			t.Errorf("pod %s left after a pod of a later drain wave; order: %v", key, w.leaving)
			break
		}
		last = wave(key)
	}
	if last != 2 {
		t.Errorf("the critical pod was not seen leaving last: %v", w.leaving)
	}
}

package devcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/internal/testcluster"
)

// TestKwokConfig checks, without starting anything, that the embedded kwok
// configuration is written against this package's constants, and that the
// generated kwokctl configuration names every binary and distinct ports.
func TestKwokConfig(t *testing.T) {
	docs := splitYAML(t, kwokConfig)
	notReadyKey := `.metadata.labels["` + NotReadyLabel + `"]`
	stages := map[string]map[string]any{}
	for _, d := range docs {
		switch d["kind"] {
		case "KwokConfiguration":
			got := dig(d, "options", "manageNodesWithAnnotationSelector")
			if want := ManagedNodeAnnotation + "=" + ManagedNodeAnnotationValue; got != want {
				t.Errorf("kwok manages nodes with annotation selector %v, want %q", got, want)
			}
		case "Stage":
			stages[dig(d, "metadata", "name").(string)] = d
		default:
			t.Errorf("unexpected document of kind %v", d["kind"])
		}
	}
	for name, wantOp := range map[string]string{
		"node-initialize":           "NotIn",
		"node-heartbeat-with-lease": "NotIn",
		"node-not-ready-hold":       "In",
	} {
		s, ok := stages[name]
		if !ok {
			t.Errorf("no stage %s", name)
			continue
		}
		found := false
		exprs, _ := dig(s, "spec", "selector", "matchExpressions").([]any)
		for _, e := range exprs {
			e := e.(map[string]any)
			if e["key"] == notReadyKey {
				found = true
				vals, _ := e["values"].([]any)
				if e["operator"] != wantOp || len(vals) != 1 || vals[0] != "true" {
					t.Errorf("stage %s matches %s with %v %v, want %s [true]", name, notReadyKey, e["operator"], vals, wantOp)
				}
			}
		}
		if !found {
			t.Errorf("stage %s does not look at %s", name, notReadyKey)
		}
	}
	for _, name := range []string{"pod-ready", "pod-complete", "pod-delete"} {
		if _, ok := stages[name]; !ok {
			t.Errorf("no stage %s", name)
		}
	}
	if len(stages) != 6 {
		t.Errorf("%d stages, want 6", len(stages))
	}

	c := &Cluster{Name: "x", binariesDir: "/bin/kube"}
	cfg, err := c.config([]int{21001, 21002, 21003, 21004, 21005, 21006})
	if err != nil {
		t.Fatal(err)
	}
	docs = splitYAML(t, cfg)
	if len(docs) != 8 || docs[0]["kind"] != "KwokctlConfiguration" {
		t.Fatalf("generated config: %d documents, the first of kind %v; want the KwokctlConfiguration and kwok.yaml", len(docs), docs[0]["kind"])
	}
	c.heartbeat = 2 * time.Second
	withHeartbeat, err := c.config([]int{21001, 21002, 21003, 21004, 21005, 21006})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(withHeartbeat, []byte("durationMilliseconds: 2000\n    jitterDurationMilliseconds: 2200\n")) {
		t.Errorf("the heartbeat option did not shorten kwok's heartbeat")
	}
	opts := docs[0]["options"].(map[string]any)
	ports := map[float64]bool{}
	for k, v := range opts {
		switch {
		case strings.HasSuffix(k, "Binary"):
			if s, _ := v.(string); !strings.HasPrefix(s, "/bin/kube/") {
				t.Errorf("%s = %v, not in the binaries folder", k, v)
			}
		case strings.HasSuffix(k, "Port"):
			ports[v.(float64)] = true
		}
	}
	if len(ports) != 6 {
		t.Errorf("%d distinct ports, want 6: %v", len(ports), opts)
	}
}

func splitYAML(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for _, part := range strings.Split(string(b), "\n---\n") {
		var d map[string]any
		if err := yaml.Unmarshal([]byte(part), &d); err != nil {
			t.Fatalf("parsing %q: %v", part, err)
		}
		docs = append(docs, d)
	}
	return docs
}

func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// fakeBinaries is a folder of empty executables: enough for everything but
// starting a cluster.
func fakeBinaries(t *testing.T) string {
	dir := t.TempDir()
	for _, b := range binaries {
		if err := os.WriteFile(filepath.Join(dir, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestOptionsRejected(t *testing.T) {
	bin := fakeBinaries(t)
	if err := os.Remove(filepath.Join(bin, "kwokctl")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Name: "ok", BinariesDir: bin}, "lacks the executables kwokctl"},
		{Options{Name: "ok"}, "no BinariesDir"},
		{Options{Name: "Upper", BinariesDir: bin}, "invalid cluster name"},
		{Options{Name: "../escape", BinariesDir: bin}, "invalid cluster name"},
		{Options{Name: "", BinariesDir: bin}, "invalid cluster name"},
	} {
		tc.opts.WorkDir = t.TempDir()
		if _, err := Create(context.Background(), tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Create(%+v) = %v, want an error saying %q", tc.opts, err, tc.want)
		}
	}
}

func TestDeleteCutShortCreation(t *testing.T) {
	opts := Options{Name: "half", BinariesDir: fakeBinaries(t), WorkDir: t.TempDir()}
	if _, err := Open(opts); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("opening a cluster never created: %v, want an error wrapping fs.ErrNotExist", err)
	}
	// What kwokctl leaves when stopped before it saved the configuration.
	dir := filepath.Join(opts.WorkDir, "clusters", opts.Name)
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o750); err != nil {
		t.Fatal(err)
	}
	c, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s after Delete: %v, want it gone", dir, err)
	}
}

func TestLastLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"a\nb\nc", 0, ""},
		{"", 3, ""},
	} {
		if got := string(lastLines([]byte(tc.in), tc.n)); got != tc.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestCluster starts one cluster and runs everything that needs one against
// it, since every start costs seconds.
func TestCluster(t *testing.T) {
	bin, err := testcluster.Binaries()
	if err != nil {
		t.Fatalf("the kwok cluster needs the Kubernetes binaries: %v", err)
	}
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var kwokctlLog bytes.Buffer
	start := time.Now()
	// kwok's status heartbeat comes every two seconds instead of ten minutes,
	// so that NotReadyLabelHoldsNode sees that a heartbeat queued before the
	// label was set does not make the node Ready.
	c, err := Create(ctx, Options{Name: "e2e", BinariesDir: bin, WorkDir: work, Log: &kwokctlLog, Ephemeral: true, heartbeat: 2 * time.Second})
	if err != nil {
		t.Fatalf("%v\nkwokctl and component logs:\n%s", err, kwokctlLog.Bytes())
	}
	t.Logf("cluster %s created and ready in %v", c.Name, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := c.Delete(context.Background()); err != nil {
			t.Errorf("deleting the cluster: %v", err)
		}
	})
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("ManagedNodeRunsPods", func(t *testing.T) {
		dumpLogsOnFailure(t, c)
		testManagedNodeRunsPods(ctx, t, cs)
	})
	t.Run("NotReadyLabelHoldsNode", func(t *testing.T) {
		dumpLogsOnFailure(t, c)
		testNotReadyLabel(ctx, t, cs)
	})
	t.Run("APIServerStopAndStart", func(t *testing.T) {
		dumpLogsOnFailure(t, c)
		testAPIServerStopAndStart(ctx, t, c, cs)
	})
	t.Run("SecondClusterAndWatchdog", func(t *testing.T) {
		dumpLogsOnFailure(t, c)
		testSecondCluster(ctx, t, c, bin)
	})
	t.Run("Delete", func(t *testing.T) {
		dumpLogsOnFailure(t, c)
		testDelete(ctx, t, c, bin)
	})
}

func dumpLogsOnFailure(t *testing.T, c *Cluster) {
	t.Cleanup(func() {
		if t.Failed() {
			var b strings.Builder
			c.DumpLogs(&b, 40)
			t.Logf("logs of cluster %s:\n%s", c.Name, b.String())
		}
	})
}

const poolLabel = "devcluster.nodewright.dev/pool"

// kwokNode is a Node as nodewright's kwok cloud provider creates it.
func kwokNode(name, pool string) *corev1.Node {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{poolLabel: pool, corev1.LabelHostname: name},
			Annotations: map[string]string{ManagedNodeAnnotation: ManagedNodeAnnotationValue},
		},
		Spec:   corev1.NodeSpec{ProviderID: "kwok://" + name},
		Status: corev1.NodeStatus{Capacity: resources, Allocatable: resources},
	}
}

func createNode(ctx context.Context, t *testing.T, cs kubernetes.Interface, n *corev1.Node) {
	t.Helper()
	if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating node %s: %v", n.Name, err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{})
	})
}

// readyStatus is the status of node's Ready condition, "" if it has none.
func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// eventually polls cond until it holds, failing the test after timeout with
// cond's last description of the state.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v; last state: %s", what, timeout, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitNodeReady(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, timeout time.Duration) time.Duration {
	t.Helper()
	return eventually(t, timeout, "node "+name+" Ready", func() (bool, string) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return readyStatus(n) == corev1.ConditionTrue, fmt.Sprintf("Ready=%q, conditions %v", readyStatus(n), n.Status.Conditions)
	})
}

func testManagedNodeRunsPods(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	const pool = "runs-pods"
	managed := kwokNode("kwok-runs-pods", pool)
	createNode(ctx, t, cs, managed)
	// The same node without kwok's annotation, so that it shows kwok leaves
	// such nodes alone; unschedulable, so that no pod waits on it.
	unmanaged := kwokNode("not-kwok", pool)
	unmanaged.Annotations = nil
	unmanaged.Spec.Unschedulable = true
	createNode(ctx, t, cs, unmanaged)

	took := waitNodeReady(ctx, t, cs, managed.Name, 30*time.Second)
	t.Logf("node Ready %v after creation", took.Round(time.Millisecond))
	n, err := cs.CoreV1().Nodes().Get(ctx, managed.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Status.Allocatable[corev1.ResourceCPU]; got.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("allocatable cpu %s after kwok initialised the node, want the 4 it was created with", got.String())
	}
	if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, managed.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("kwok keeps no lease for node %s: %v", managed.Name, err)
	}

	labels := map[string]string{"app": "web"}
	spec := corev1.PodSpec{
		NodeSelector: map[string]string{poolLabel: pool},
		Containers: []corev1.Container{{
			Name: "web", Image: "registry.invalid/web:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
		}},
	}
	replicas := int32(3)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: metav1.NamespaceDefault},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
	start := time.Now()
	if _, err := cs.AppsV1().Deployments(dep.Namespace).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	listPods := func() ([]corev1.Pod, error) {
		l, err := cs.CoreV1().Pods(dep.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	eventually(t, 60*time.Second, "3 pods of the Deployment bound to the kwok node and Running", func() (bool, string) {
		pods, err := listPods()
		if err != nil {
			return false, err.Error()
		}
		var states []string
		running := 0
		for _, p := range pods {
			ready := false
			for _, c := range p.Status.Conditions {
				ready = ready || c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
			}
			if p.Spec.NodeName == managed.Name && p.Status.Phase == corev1.PodRunning && ready && p.Status.PodIP != "" {
				running++
			}
			states = append(states, fmt.Sprintf("%s on %q: %s ready=%v", p.Name, p.Spec.NodeName, p.Status.Phase, ready))
		}
		return len(pods) == 3 && running == 3, strings.Join(states, "; ")
	})
	t.Logf("Deployment's 3 pods Running %v after its creation", time.Since(start).Round(time.Millisecond))

	// Scaling down deletes two pods; kwok must finish them off, as a kubelet
	// would, or they stay Terminating.
	patch := []byte(`{"spec":{"replicas":1}}`)
	if _, err := cs.AppsV1().Deployments(dep.Namespace).Patch(ctx, dep.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "pods removed on scale-down", func() (bool, string) {
		pods, err := listPods()
		if err != nil {
			return false, err.Error()
		}
		var states []string
		for _, p := range pods {
			states = append(states, fmt.Sprintf("%s deleting=%v", p.Name, p.DeletionTimestamp != nil))
		}
		return len(pods) == 1 && pods[0].DeletionTimestamp == nil, strings.Join(states, "; ")
	})

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: metav1.NamespaceDefault},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: func() corev1.PodSpec {
			s := *spec.DeepCopy()
			s.RestartPolicy = corev1.RestartPolicyNever
			return s
		}()}},
	}
	if _, err := cs.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "Job complete", func() (bool, string) {
		j, err := cs.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("succeeded=%d active=%d conditions=%v", j.Status.Succeeded, j.Status.Active, j.Status.Conditions)
	})

	// By now kwok has had every chance to touch the unannotated node.
	u, err := cs.CoreV1().Nodes().Get(ctx, unmanaged.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if readyStatus(u) == corev1.ConditionTrue || u.Status.NodeInfo.KubeletVersion != "" {
		t.Errorf("kwok animated node %s, which lacks its annotation: Ready=%q, kubelet %q", u.Name, readyStatus(u), u.Status.NodeInfo.KubeletVersion)
	}
}

func testNotReadyLabel(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	n := kwokNode("kwok-not-ready", "not-ready")
	createNode(ctx, t, cs, n)
	waitNodeReady(ctx, t, cs, n.Name, 30*time.Second)
	// The hold below means something only if kwok's heartbeats reach the
	// node, each queued for the node as it was when the last one landed.
	var first time.Time
	eventually(t, 10*time.Second, "a status heartbeat from kwok", func() (bool, string) {
		got, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if first.IsZero() {
					first = c.LastHeartbeatTime.Time
				}
				return c.LastHeartbeatTime.After(first), fmt.Sprintf("Ready heartbeat at %v", c.LastHeartbeatTime)
			}
		}
		return false, "no Ready condition"
	})
	lease, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("kwok keeps no lease for node %s: %v", n.Name, err)
	}

	// As the fault injector does it: the label first, so that kwok stops
	// looking before the status changes.
	labelPatch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, NotReadyLabel)
	if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(labelPatch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	notReady := map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletRestarting",
		Message: "simulated kubelet restart", LastHeartbeatTime: now, LastTransitionTime: now,
	}}}}
	statusPatch, err := json.Marshal(notReady)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, statusPatch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}

	// kwok renews a lease every 10 s (a quarter of its 40 s duration); the
	// window is longer so that a renewal must fall inside it.
	const hold = 12 * time.Second
	deadline := time.Now().Add(hold)
	checks := 0
	for time.Now().Before(deadline) {
		got, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s := readyStatus(got); s != corev1.ConditionFalse {
			t.Fatalf("node %s turned Ready=%q %v after it was labelled and made NotReady", n.Name, s, hold-time.Until(deadline))
		}
		checks++
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("node stayed NotReady for %v (%d checks)", hold, checks)
	renewed, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !renewed.Spec.RenewTime.After(lease.Spec.RenewTime.Time) {
		t.Errorf("kwok stopped renewing the lease of the labelled node: renewed at %v, and at %v %v later", lease.Spec.RenewTime, renewed.Spec.RenewTime, hold)
	}

	unlabel := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, NotReadyLabel)
	if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(unlabel), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	took := waitNodeReady(ctx, t, cs, n.Name, 10*time.Second)
	t.Logf("node Ready again %v after the label was removed", took.Round(time.Millisecond))
}

func testSecondCluster(ctx context.Context, t *testing.T, first *Cluster, bin string) {
	// The second cluster lives as long as this process, rather than the test
	// binary, so that killing it shows the watchdog at work.
	owner := exec.Command("sleep", "600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = owner.Process.Kill()
		_ = owner.Wait()
	})
	start := time.Now()
	second, err := Create(ctx, Options{Name: "e2e-second", BinariesDir: bin, WorkDir: first.WorkDir, Ephemeral: true, owner: owner.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second cluster created and ready in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := second.Delete(context.Background()); err != nil {
			t.Errorf("deleting the second cluster: %v", err)
		}
	})
	for _, c := range []*Cluster{first, second} {
		if err := readyz(ctx, c); err != nil {
			t.Fatalf("cluster %s: %v", c.Name, err)
		}
	}
	cfg1, _ := first.RESTConfig()
	cfg2, _ := second.RESTConfig()
	if cfg1.Host == cfg2.Host {
		t.Errorf("both clusters serve at %s", cfg1.Host)
	}

	_, err = Create(ctx, Options{Name: first.Name, BinariesDir: bin, WorkDir: first.WorkDir})
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("creating a cluster named like a running one: %v, want an error wrapping fs.ErrExist", err)
	}
	opened, err := Open(Options{Name: second.Name, BinariesDir: bin, WorkDir: first.WorkDir})
	if err != nil {
		t.Fatal(err)
	}
	if opened.Kubeconfig != second.Kubeconfig || opened.Dir != second.Dir {
		t.Errorf("Open found %s, %s; Create made %s, %s", opened.Dir, opened.Kubeconfig, second.Dir, second.Kubeconfig)
	}

	pids := second.componentPIDs()
	if len(pids) != len(Components()) {
		t.Fatalf("pids of the second cluster: %v, want one for each of %v", pids, Components())
	}
	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait()
	took := eventually(t, 30*time.Second, "watchdog deletes the second cluster once its owner exits", func() (bool, string) {
		var alive []string
		for name, pid := range pids {
			if second.running(pid) {
				alive = append(alive, name)
			}
		}
		_, err := os.Stat(second.Dir)
		return len(alive) == 0 && errors.Is(err, fs.ErrNotExist), fmt.Sprintf("running: %v; %s: %v", alive, second.Dir, err)
	})
	t.Logf("watchdog deleted the second cluster %v after its owner exited", took.Round(time.Millisecond))
	if err := readyz(ctx, first); err != nil {
		t.Errorf("the first cluster after the second went: %v", err)
	}
}

func testDelete(ctx context.Context, t *testing.T, c *Cluster, bin string) {
	pids := c.componentPIDs()
	if len(pids) != len(Components()) {
		t.Fatalf("pids: %v, want one for each of %v", pids, Components())
	}
	// As `nodewright dev down` would: from the name, not the handle Create
	// returned.
	opened, err := Open(Options{Name: c.Name, BinariesDir: bin, WorkDir: c.WorkDir})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := opened.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted in %v", time.Since(start).Round(time.Millisecond))
	for name, pid := range pids {
		if c.running(pid) {
			t.Errorf("%s (pid %d) still runs after Delete returned", name, pid)
		}
	}
	if _, err := os.Stat(c.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s after Delete: %v, want it gone", c.Dir, err)
	}
	if err := opened.Delete(ctx); err != nil {
		t.Errorf("deleting again: %v", err)
	}
	if _, err := Open(Options{Name: c.Name, BinariesDir: bin, WorkDir: c.WorkDir}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("opening a deleted cluster: %v, want an error wrapping fs.ErrNotExist", err)
	}
}

func readyz(ctx context.Context, c *Cluster) error {
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("/readyz: %w", err)
	}
	if string(body) != "ok" {
		return fmt.Errorf("/readyz: %s", body)
	}
	return nil
}

// TestRESTConfigReadsCertificates: the client configuration carries the
// admin's certificates themselves, not their files, so that a client
// outliving the cluster does not keep reloading files that are gone.
func TestRESTConfigReadsCertificates(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"ca.crt": "the CA", "admin.crt": "the certificate", "admin.key": "the key"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := filepath.Join(dir, "kubeconfig.yaml")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", certificate-authority: `+filepath.Join(dir, "ca.crt")+`}
users:
- name: u
  user: {client-certificate: `+filepath.Join(dir, "admin.crt")+`, client-key: `+filepath.Join(dir, "admin.key")+`}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := (&Cluster{Name: "t", Kubeconfig: kubeconfig}).RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" {
		t.Errorf("files still named: CA %q, certificate %q, key %q", cfg.CAFile, cfg.CertFile, cfg.KeyFile)
	}
	if string(cfg.CAData) != "the CA" || string(cfg.CertData) != "the certificate" || string(cfg.KeyData) != "the key" {
		t.Errorf("read CA %q, certificate %q, key %q", cfg.CAData, cfg.CertData, cfg.KeyData)
	}
}

func TestAPIServerFlags(t *testing.T) {
	for _, tc := range []struct {
		flags   []string
		want    []string // key=value of each extraArg
		wantErr string
	}{
		{flags: nil},
		{flags: []string{"http2-max-streams-per-connection=1000"}, want: []string{"http2-max-streams-per-connection=1000"}},
		{flags: []string{"--v=2", "--feature-gates=A=true,B=false"}, want: []string{"v=2", "feature-gates=A=true,B=false"}},
		{flags: []string{"--v"}, wantErr: `"--v": want name=value`},
		{flags: []string{"=1"}, wantErr: `"=1": want name=value`},
	} {
		for _, component := range []string{ComponentKubeAPIServer, ComponentKubeScheduler} {
			opts := Options{Name: "x", BinariesDir: fakeBinaries(t)}
			other := ComponentKubeScheduler
			if component == ComponentKubeAPIServer {
				opts.APIServerFlags = tc.flags
			} else {
				opts.SchedulerFlags = tc.flags
				other = ComponentKubeAPIServer
			}
			c, err := newCluster(opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("%s %q: error %v, want one containing %s", component, tc.flags, err, tc.wantErr)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s %q: %v", component, tc.flags, err)
			}
			cfg, err := c.config([]int{21001, 21002, 21003, 21004, 21005, 21006})
			if err != nil {
				t.Fatal(err)
			}
			if got := componentExtraArgs(t, cfg, component); !slices.Equal(got, tc.want) {
				t.Errorf("%s %q: extra args %q, want %q", component, tc.flags, got, tc.want)
			}
			if got := componentExtraArgs(t, cfg, other); len(got) > 0 {
				t.Errorf("%s %q: %s got extra args %q too", component, tc.flags, other, got)
			}
		}
	}
}

// componentExtraArgs is key=value of each extraArg kwokctl's configuration
// gives component.
func componentExtraArgs(t *testing.T, cfg []byte, component string) []string {
	t.Helper()
	var got []string
	patches, _ := splitYAML(t, cfg)[0]["componentsPatches"].([]any)
	for _, p := range patches {
		p := p.(map[string]any)
		if p["name"] != component {
			continue
		}
		for _, a := range p["extraArgs"].([]any) {
			a := a.(map[string]any)
			// kwokctl drops an overriding flag that it does not set.
			if a["override"] == true {
				t.Errorf("%s: %v overrides; kwokctl would drop it", component, a)
			}
			got = append(got, fmt.Sprintf("%v=%v", a["key"], a["value"]))
		}
	}
	return got
}

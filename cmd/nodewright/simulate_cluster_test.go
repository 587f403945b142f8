package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/livecluster"
	"github.com/nodewright/nodewright/internal/manifests"
	"github.com/nodewright/nodewright/internal/simulate"
	"github.com/nodewright/nodewright/internal/testcluster"
)

// TestSimulateFromClusterMatchesADump runs simulate --from-cluster against
// a real API server holding a NodePool, its KWOKNodeClass, a node with pods,
// pending pods and a Deployment without pods, and checks that the run is
// the one simulate makes from a kubectl get -o yaml dump of the same
// objects, that nothing but reads reached the API server, and that no
// object changed.
func TestSimulateFromClusterMatchesADump(t *testing.T) {
	cluster, err := testcluster.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	ctx := context.Background()
	// The API server stamps creationTimestamps in whole seconds.
	seeded := time.Now().UTC().Truncate(time.Second)
	seedCluster(t, ctx, cluster.Client)

	proxy := &apiProxy{config: cluster.Config, forbid: map[string]bool{}}
	kubeconfig := proxy.start(t)
	timeline := filepath.Join(t.TempDir(), "timeline.yaml")
	writeFile(t, timeline, "duration: 30m\nevents:\n- at: 10m\n  scale: {kind: Deployment, namespace: shop, name: web, replicas: 5}\n")
	before := resourceVersions(t, ctx, cluster.Client)

	live, stderr, err := execute(simulateCommand(), "--from-cluster", "--kubeconfig", kubeconfig, "--timeline", timeline, "-o", "json")
	if err != nil {
		t.Fatalf("simulate --from-cluster: %v\n%s", err, stderr)
	}
	dump := dumpCluster(t, ctx, cluster.Client)
	fromDump, stderr2, err := execute(simulateCommand(), "-f", dump, "--timeline", timeline, "-o", "json")
	if err != nil {
		t.Fatalf("simulate -f dump: %v\n%s", err, stderr2)
	}
	// The starting state itself, object by object.
	c, target, err := livecluster.Connect(kubeconfig, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := livecluster.Read(ctx, c, target, manifests.Kinds())
	if err != nil {
		t.Fatal(err)
	}
	liveSet, _ := manifests.LoadOnto(manifests.Base{Origin: target.String(), Docs: objs.Docs})
	dumpSet, _ := manifests.Load(dump)
	dumpSet.Files = nil
	if counts := liveSet.Objects(); counts["Pod"] != 7 || counts["PodDisruptionBudget"] != 1 || !equality.Semantic.DeepEqual(liveSet, dumpSet) {
		t.Errorf("the objects read from the cluster (%v) are not those of the dump (%v)", counts, dumpSet.Objects())
	}
	a, b := decodeResult(t, live), decodeResult(t, fromDump)
	if want := "cluster envtest (" + proxy.url + ")"; len(a.Inputs) != 2 || a.Inputs[0] != want {
		t.Errorf("inputs %q; want %q, then the timeline", a.Inputs, want)
	}
	if a.Pods.Running < 7 || a.Launched["provisioning"] == 0 {
		t.Errorf("running %d pods, launched %v; want the bound, pending and Deployment pods running on launched nodes", a.Pods.Running, a.Launched)
	}
	// The objects were created today, long after the fixed default start:
	// the run begins once they exist, so ages and cost are not negative.
	if start, err := time.Parse(time.RFC3339, a.Start); err != nil || start.Before(seeded) || a.Cost < 0 {
		t.Errorf("start %s, cost $%.2f; want a start no earlier than the objects' creation (%s) and a cost of 0 or more", a.Start, a.Cost, seeded.Format(time.RFC3339))
	}
	// Only where the objects came from may differ.
	for _, r := range []*simulate.Result{a, b} {
		r.Inputs = nil
		for i := range r.Skipped {
			r.Skipped[i].File = ""
		}
	}
	ja, _ := json.MarshalIndent(a, "", "  ")
	jb, _ := json.MarshalIndent(b, "", "  ")
	if string(ja) != string(jb) {
		t.Errorf("--from-cluster and the dump differ:\n--from-cluster:\n%s\ndump:\n%s", ja, jb)
	}
	if strings.ReplaceAll(stderr, "cluster envtest ("+proxy.url+")", "") != strings.ReplaceAll(stderr2, dump, "") {
		t.Errorf("warnings differ:\n--from-cluster:\n%s\ndump:\n%s", stderr, stderr2)
	}
	liveText, _, err := execute(simulateCommand(), "--from-cluster", "--kubeconfig", kubeconfig, "--timeline", timeline)
	if err != nil {
		t.Fatal(err)
	}
	dumpText, _, err := execute(simulateCommand(), "-f", dump, "--timeline", timeline)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Replace(liveText, "cluster envtest ("+proxy.url+")", dump, 1) != dumpText {
		t.Errorf("summaries differ:\n--from-cluster:\n%s\ndump:\n%s", liveText, dumpText)
	}

	// Files on top: a NodePool of the same name replaces the cluster's,
	// without a warning, and a new Deployment adds its pods.
	extra := filepath.Join(t.TempDir(), "extra.yaml")
	writeFile(t, extra, `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: nodewright.dev, kind: KWOKNodeClass, name: default}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.2xlarge]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: batch, namespace: shop}
spec:
  replicas: 4
  selector: {matchLabels: {app: batch}}
  template:
    metadata: {labels: {app: batch}}
    spec:
      containers: [{name: c, image: batch, resources: {requests: {cpu: "1"}}}]
`)
	out, stderr, err := execute(simulateCommand(), "--from-cluster", "--kubeconfig", kubeconfig, "-f", extra, "--timeline", timeline, "-o", "json")
	if err != nil {
		t.Fatalf("simulate --from-cluster -f: %v\n%s", err, stderr)
	}
	if strings.Contains(stderr, "defined twice") {
		t.Errorf("the file's NodePool was reported as a duplicate:\n%s", stderr)
	}
	withExtra := decodeResult(t, out)
	if withExtra.Pods.Running != a.Pods.Running+4 {
		t.Errorf("with the batch Deployment: %d pods running, want %d", withExtra.Pods.Running, a.Pods.Running+4)
	}
	for _, g := range withExtra.Nodes {
		if g.InstanceType != "c5.2xlarge" && g.InstanceType != "m5.large" {
			t.Errorf("launched %s; the file's NodePool allows c5.2xlarge alone (m5.large is the existing node)", g.InstanceType)
		}
	}

	if verbs := proxy.verbs(); len(verbs) == 0 || slices.ContainsFunc(verbs, func(v string) bool { return v != http.MethodGet }) {
		t.Errorf("requests to the API server: %v; want reads (GET) only", verbs)
	}
	if after := resourceVersions(t, ctx, cluster.Client); !maps.Equal(before, after) {
		t.Errorf("objects changed during simulate --from-cluster:\nbefore %v\nafter  %v", before, after)
	}

	t.Run("RBAC", func(t *testing.T) {
		proxy.forbid["kwoknodeclasses"], proxy.forbid["pods"] = true, true
		defer func() { proxy.forbid = map[string]bool{} }()
		_, _, err := execute(simulateCommand(), "--from-cluster", "--kubeconfig", kubeconfig)
		if err == nil {
			t.Fatal("simulate read a cluster whose user may not list pods")
		}
		for _, want := range []string{"may not list kwoknodeclasses.nodewright.dev, pods", "ClusterRole", "kubectl auth can-i list"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})
}

// TestSimulateFromClusterUnreachable: a kubeconfig whose server does not
// answer gives an error that names the server and what to check.
func TestSimulateFromClusterUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := "https://" + l.Addr().String()
	l.Close()
	kubeconfig := writeKubeconfig(t, server)
	_, _, err = execute(simulateCommand(), "--from-cluster", "--kubeconfig", kubeconfig)
	if err == nil {
		t.Fatal("simulate --from-cluster succeeded against a closed port")
	}
	for _, want := range []string{"cluster envtest (" + server + ")", "connection refused", "check that the cluster is up", "--kubeconfig"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestSimulateFromClusterNoKubeconfig: without a kubeconfig the error says
// where it looked.
func TestSimulateFromClusterNoKubeconfig(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	t.Setenv("KUBECONFIG", a+string(filepath.ListSeparator)+b)
	_, _, err := execute(simulateCommand(), "--from-cluster")
	if err == nil {
		t.Fatal("simulate --from-cluster succeeded without a kubeconfig")
	}
	for _, want := range []string{"no kubeconfig found", "$KUBECONFIG names " + a + ", " + b, "--kubeconfig PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	_, _, err = execute(simulateCommand(), "--from-cluster", "--kubeconfig", filepath.Join(dir, "missing"))
	if err == nil || !strings.Contains(err.Error(), "--kubeconfig "+filepath.Join(dir, "missing")) {
		t.Errorf("error %v; want one naming the missing --kubeconfig file", err)
	}
}

func seedCluster(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	create := func(objs ...client.Object) {
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
			}
		}
	}
	ref := &karpv1.NodeClassReference{Group: kwokv1alpha1.SchemeGroupVersion.Group, Kind: "KWOKNodeClass", Name: "default"}
	onDemand := karpv1.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
		Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}}}
	create(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{
			Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: ref, Requirements: []karpv1.NodeSelectorRequirementWithMinValues{onDemand,
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn,
					Values: []string{"m5.large", "m5.xlarge", "m5.2xlarge"}}}}}}}},
	)
	labels := map[string]string{karpv1.NodePoolLabelKey: "general", corev1.LabelInstanceTypeStable: "m5.large",
		corev1.LabelTopologyZone: "zone-a", karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-abc", Labels: labels},
		Spec: karpv1.NodeClaimSpec{NodeClassRef: ref, Requirements: []karpv1.NodeSelectorRequirementWithMinValues{onDemand}}}
	create(nc)
	nc.Status.ProviderID = kwok.ProviderIDPrefix + nc.Name
	nc.Status.NodeName = nc.Name
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("29")}
	nc.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("7Gi"), corev1.ResourcePods: resource.MustParse("29")}
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched"})
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionTrue, Reason: "Registered"})
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"})
	if err := c.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID}}
	create(node)
	node.Status.Capacity, node.Status.Allocatable = nc.Status.Capacity, nc.Status.Allocatable
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	if err := c.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	pod := func(name, nodeName, cpu string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": "api"}},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "api",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	}
	for i := range 2 {
		p := pod(fmt.Sprintf("bound-%d", i), node.Name, "500m")
		create(p)
		p.Status.Phase = corev1.PodRunning
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		p := pod(fmt.Sprintf("pending-%d", i), "", "1500m")
		create(p)
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptrTo(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "web",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}}}}}}
	create(web, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: ptrTo(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}})
}

func ptrTo[T any](v T) *T { return &v }

// dumpCluster writes what `kubectl get -o yaml` prints for every kind the
// simulator reads, as one List, read with the typed client rather than
// the way --from-cluster reads it.
func dumpCluster(t *testing.T, ctx context.Context, c client.Client) string {
	t.Helper()
	objs := listAll(t, ctx, c)
	for _, o := range objs {
		o.SetManagedFields(nil)
	}
	data, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": objs})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dump.yaml")
	writeFile(t, path, string(data))
	return path
}

// resourceVersions are every object's resourceVersion, by kind, namespace
// and name.
func resourceVersions(t *testing.T, ctx context.Context, c client.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range listAll(t, ctx, c) {
		out[o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
	}
	return out
}

// listAll lists every object of the kinds the simulator reads, each with
// its apiVersion and kind set.
func listAll(t *testing.T, ctx context.Context, c client.Client) []client.Object {
	t.Helper()
	var out []client.Object
	for _, gvk := range manifests.Kinds() {
		l, err := c.Scheme().New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.List(ctx, l.(client.ObjectList)); err != nil {
			t.Fatalf("listing %s: %v", gvk.Kind, err)
		}
		objs, err := meta.ExtractList(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			o.GetObjectKind().SetGroupVersionKind(gvk)
			out = append(out, o.(client.Object))
		}
	}
	return out
}

// apiProxy stands between simulate and the API server: it records the
// method of every request and answers 403 for the resources in forbid, as
// RBAC would.
type apiProxy struct {
	config *rest.Config
	url    string
	forbid map[string]bool
	mu     sync.Mutex
	seen   []string
}

// start serves the proxy and returns a kubeconfig pointing at it.
func (p *apiProxy) start(t *testing.T) string {
	t.Helper()
	target, err := url.Parse(p.config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(p.config)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Method)
		p.mu.Unlock()
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if res := parts[len(parts)-1]; p.forbid[res] {
			group := ""
			if parts[0] == "apis" {
				group = parts[1]
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
				Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden, Details: &metav1.StatusDetails{Group: group, Kind: res},
				Message: fmt.Sprintf("%s is forbidden: User \"tester\" cannot list resource %q", res, res)})
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return writeKubeconfig(t, srv.URL)
}

func (p *apiProxy) verbs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// writeKubeconfig writes a kubeconfig whose context envtest points at
// server, without credentials.
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: strings.HasPrefix(server, "https:")}
	cfg.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	cfg.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func decodeResult(t *testing.T, out string) *simulate.Result {
	t.Helper()
	var r simulate.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("decoding -o json: %v\n%s", err, out)
	}
	return &r
}

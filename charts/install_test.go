package charts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodewright/nodewright/config/crd"
	"github.com/nodewright/nodewright/internal/testcluster"
)

// cluster is a kube-apiserver and etcd with nothing installed: the charts
// install the CRDs. There are no kubelets, so no pod runs; what is checked
// is what the API server accepts and stores.
type cluster struct {
	kubeconfig string
	client     client.Client
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	log.SetLogger(logr.Discard())
	dir, err := testcluster.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver and etcd from %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stopping the API server: %v", err)
		}
	})
	// Helm reads a kubeconfig, as its command does.
	user, err := env.AddUser(envtest.User{Name: "helm", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{kubeconfig: path, client: c}
}

// install installs a chart as `helm install --create-namespace` does, with
// values over the chart's own, without waiting for pods; opts set more of
// the install's flags.
func (c *cluster) install(t *testing.T, chartDir, name, namespace string, values map[string]any, opts ...func(*action.Install)) {
	t.Helper()
	if err := c.tryInstall(t, chartDir, name, namespace, values, opts...); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) tryInstall(t *testing.T, chartDir, name, namespace string, values map[string]any, opts ...func(*action.Install)) error {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	cache := t.TempDir()
	flags.KubeConfig, flags.Namespace, flags.CacheDir = &c.kubeconfig, &namespace, &cache
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, namespace, "secret", t.Logf); err != nil {
		return fmt.Errorf("helm configuration: %w", err)
	}
	ch, err := loader.Load(chartDir)
	if err != nil {
		return err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace = name, namespace, true
	in.Timeout = 2 * time.Minute
	for _, o := range opts {
		o(in)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rel, err := in.RunWithContext(ctx, ch, values)
	if err != nil {
		return fmt.Errorf("helm install %s %s -n %s: %w", name, chartDir, namespace, err)
	}
	if rel.Info.Status != release.StatusDeployed {
		return fmt.Errorf("release %s is %s, want deployed", name, rel.Info.Status)
	}
	return nil
}

func skipCRDs(in *action.Install)      { in.SkipCRDs = true }
func takeOwnership(in *action.Install) { in.TakeOwnership = true }

// ownedBy fails unless every CRD belongs to the Helm release.
func ownedBy(t *testing.T, crds []*apiextensionsv1.CustomResourceDefinition, name string) {
	t.Helper()
	for _, have := range crds {
		if got := have.Labels["app.kubernetes.io/managed-by"]; got != "Helm" {
			t.Errorf("CRD %s is managed by %q, want Helm", have.Name, got)
		}
		if got := have.Annotations["meta.helm.sh/release-name"]; got != name {
			t.Errorf("CRD %s belongs to release %q, want %s", have.Name, got, name)
		}
	}
}

// fetch reads back from the API server each object the chart rendered.
func (c *cluster) fetch(t *testing.T, rendered []client.Object) []client.Object {
	t.Helper()
	var out []client.Object
	for _, r := range rendered {
		obj, err := scheme.New(r.GetObjectKind().GroupVersionKind())
		if err != nil {
			t.Fatalf("%s: %v", key(r), err)
		}
		o := obj.(client.Object)
		if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(r), o); err != nil {
			t.Fatalf("the release has no %s: %v", key(r), err)
		}
		stripServerFields(o)
		out = append(out, o)
	}
	return out
}

// serverDefaulted is what the API server makes of the manifests of
// config/rbac and config/deploy: each is created with dryRun=All (under
// another name, as the release's objects already hold theirs), so that
// both sides of the comparison carry the server's defaults.
func (c *cluster) serverDefaulted(t *testing.T) []client.Object {
	t.Helper()
	objs, err := manifests()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		name := o.GetName()
		o.SetName(name + "-dry-run")
		if err := c.client.Create(context.Background(), o, client.DryRunAll); err != nil {
			t.Fatalf("creating %s with dryRun: %v", key(o), err)
		}
		o.SetName(name)
		stripServerFields(o)
	}
	return objs
}

// established waits until every CRD of config/crd is served, and returns them.
func (c *cluster) established(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	want, err := crd.All()
	if err != nil {
		t.Fatal(err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	deadline := time.Now().Add(time.Minute)
	for _, w := range want {
		for {
			have := &apiextensionsv1.CustomResourceDefinition{}
			err := c.client.Get(context.Background(), client.ObjectKey{Name: w.Name}, have)
			if err == nil && isEstablished(have) {
				out = append(out, have)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD %s not established within a minute (%v)", w.Name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return out
}

func isEstablished(c *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// TestInstall installs the chart with Helm's SDK into a real API server:
// with its defaults (release nodewright in namespace nodewright) it installs
// the CRDs, established, and objects the server stores exactly as it stores
// config/rbac's and config/deploy's; a second release, with a Karpenter
// user's values in namespace karpenter, stores each value where it belongs;
// then the CRD chart adopts the CRDs already there.
func TestInstall(t *testing.T) {
	c := startCluster(t)

	c.install(t, mainChart, releaseName, releaseNamespace, nil)
	c.established(t)
	r, err := render(mainChart, "", releaseName, releaseNamespace)
	if err != nil {
		t.Fatal(err)
	}
	compareWithManifests(t, c.fetch(t, r.objects), c.serverDefaulted(t))

	vals, err := chartutil.ReadValues([]byte(karpenterValues))
	if err != nil {
		t.Fatal(err)
	}
	// This API server has no prometheus-operator CRDs to hold a ServiceMonitor.
	vals["serviceMonitor"].(map[string]any)["enabled"] = false
	c.install(t, mainChart, karpenterRelease, karpenterNamespace, vals)
	r, err = render(mainChart, karpenterValues+"\nserviceMonitor: {enabled: false}\n", karpenterRelease, karpenterNamespace)
	if err != nil {
		t.Fatal(err)
	}
	runChecks(t, c.fetch(t, r.objects), false)

	// The CRDs exist and no release owns them, as in a cluster where
	// Karpenter's are installed: the CRD chart refuses them, unless told to
	// adopt them (`helm install --take-ownership`, Helm 3.17 and later).
	const crdRelease = "nodewright-crd"
	if err := c.tryInstall(t, crdChart, crdRelease, releaseNamespace, nil); err == nil || !strings.Contains(err.Error(), "invalid ownership metadata") {
		t.Errorf("installing the CRD chart over CRDs it does not own: error %v, want invalid ownership metadata", err)
	}
	c.install(t, crdChart, crdRelease, releaseNamespace, nil, takeOwnership)
	ownedBy(t, c.established(t), crdRelease)
}

// TestInstallCRDChart installs the CRD chart alone, then the chart with
// --skip-crds, as Karpenter's documentation installs karpenter-crd and
// karpenter: the CRDs are established and belong to the CRD chart's
// release, so `helm upgrade` of that release updates them.
func TestInstallCRDChart(t *testing.T) {
	c := startCluster(t)
	const crdRelease = "nodewright-crd"
	c.install(t, crdChart, crdRelease, releaseNamespace, nil)
	ownedBy(t, c.established(t), crdRelease)

	c.install(t, mainChart, releaseName, releaseNamespace, nil, skipCRDs)
	d := &appsv1.Deployment{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: releaseNamespace, Name: "nodewright"}, d); err != nil {
		t.Fatal(fmt.Errorf("the chart installed after the CRD chart: %w", err))
	}
}

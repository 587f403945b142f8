package testcluster

import (
	"fmt"

	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/config/crd"
)

// Scheme knows the core Kubernetes types and nodewright's API.
var Scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		karpv1.AddToScheme, karpv1alpha1.AddToScheme, kwokv1alpha1.AddToScheme, awsv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// Cluster is a running kube-apiserver and etcd with nodewright's CRDs.
type Cluster struct {
	Config *rest.Config
	Client client.Client
	env    *envtest.Environment
}

// Start launches a kube-apiserver and etcd and installs the CRDs.
func Start() (*Cluster, error) {
	log.SetLogger(logr.Discard())
	dir, err := Binaries()
	if err != nil {
		return nil, err
	}
	crds, err := crd.All()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		CRDs:                     crds,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
		CRDInstallOptions:        envtest.CRDInstallOptions{MaxTime: time.Minute},
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", dir, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Cluster{Config: cfg, Client: c, env: env}, nil
}

// Stop shuts the API server and etcd down and removes their data.
func (c *Cluster) Stop() error { return c.env.Stop() }

// Main runs a package's tests against one shared cluster, stored in *into:
//
//	var cluster *testcluster.Cluster
//	func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }
func Main(m *testing.M, into **Cluster) {
	c, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testcluster:", err)
		os.Exit(1)
	}
	*into = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testcluster: stopping:", err)
	}
	os.Exit(code)
}

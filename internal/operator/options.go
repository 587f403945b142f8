package operator

import (
	"time"

	"k8s.io/client-go/rest"

	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/controller/disruption"
	"github.com/nodewright/nodewright/internal/controller/nodeclaim"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	"github.com/nodewright/nodewright/internal/controller/termination"
)

// Options configure the controller; the command line fills them.
type Options struct {
	// Kubeconfig is the file to reach the cluster with; empty means in-cluster
	// configuration (or $KUBECONFIG).
	Kubeconfig string
	// Config, when set, is used instead of Kubeconfig (tests pass the
	// envtest API server's).
	Config *rest.Config
	// Namespace holds the leader lease and the learned-capacity ConfigMap.
	Namespace string

	LeaderElect   bool
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration

	MetricsAddr  string
	ProbeAddr    string
	KubeAPIQPS   float32
	KubeAPIBurst int

	Provisioning provisioning.Options
	Lifecycle    nodeclaim.Options
	Termination  termination.Options
	Disruption   disruption.Options
	GCInterval   time.Duration

	// CloudProvider is "kwok" (simulated nodes) or "aws" (EC2).
	CloudProvider string
	KWOK          KWOKOptions
	AWS           AWSOptions

	// SkipControllerNameValidation lets tests run several managers in one
	// process.
	SkipControllerNameValidation bool
}

// KWOKOptions configure the kwok provider.
type KWOKOptions struct {
	// RepairToleration is how long a node may be not Ready before node
	// repair replaces it (Karpenter's 30 minutes by default).
	RepairToleration time.Duration
	// CatalogFile is a JSON instance-type catalog; empty is the built-in one.
	CatalogFile string
	// ActualVMMemoryOverheadPercent is what simulated machines really lose to
	// the hypervisor; negative means the model's figure.
	ActualVMMemoryOverheadPercent float64
	// Faults apply where a KWOKNodeClass sets none.
	Faults kwokv1alpha1.KWOKFaults
	// FaultSeed seeds the draws of injected launch and delete errors.
	FaultSeed int64
}

// DefaultOptions are the controller's defaults.
func DefaultOptions() Options {
	return Options{
		Namespace:     "nodewright",
		LeaderElect:   true,
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
		MetricsAddr:   ":8080",
		ProbeAddr:     ":8081",
		KubeAPIQPS:    200,
		KubeAPIBurst:  400,
		Provisioning:  provisioning.DefaultOptions(),
		Lifecycle:     nodeclaim.DefaultOptions(),
		Termination:   termination.DefaultOptions(),
		Disruption:    disruption.DefaultOptions(),
		GCInterval:    30 * time.Second,
		CloudProvider: "kwok",
		KWOK:          KWOKOptions{ActualVMMemoryOverheadPercent: -1, RepairToleration: kwok.DefaultRepairToleration},
		AWS:           AWSOptions{VMMemoryOverheadPercent: 0.075, NodeClassInterval: 5 * time.Minute},
	}
}

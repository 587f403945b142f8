package operator

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/catalog"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/controller/disruption"
	"github.com/nodewright/nodewright/internal/controller/interruption"
	"github.com/nodewright/nodewright/internal/controller/nodeclaim"
	"github.com/nodewright/nodewright/internal/controller/nodeoverlay"
	"github.com/nodewright/nodewright/internal/controller/nodepool"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	staticpool "github.com/nodewright/nodewright/internal/controller/static"
	"github.com/nodewright/nodewright/internal/controller/termination"
	"github.com/nodewright/nodewright/internal/learned"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/observe"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// Scheme knows the types the controller reads and writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, karpv1alpha1.AddToScheme, kwokv1alpha1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// RESTConfig loads the cluster's configuration from a kubeconfig file, or
// in-cluster when the path is empty.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig given and no in-cluster configuration: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// runTerm runs one term of the controller (see Run) until ctx ends or the
// lease is lost.
func runTerm(ctx context.Context, opts Options, t *term) error {
	logger := log.FromContext(ctx)
	cfg := opts.Config
	if cfg == nil {
		var err error
		if cfg, err = RESTConfig(opts.Kubeconfig); err != nil {
			return err
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = opts.KubeAPIQPS, opts.KubeAPIBurst
	cfg.UserAgent = "nodewright"
	scheme := Scheme()

	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating Kubernetes client: %w", err)
	}
	if err := ensureNamespace(ctx, direct, opts.Namespace); err != nil {
		return err
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Logger:                        logger,
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:        opts.ProbeAddr,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              "nodewright-leader",
		LeaderElectionNamespace:       opts.Namespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &opts.LeaseDuration,
		RenewDeadline:                 &opts.RenewDeadline,
		RetryPeriod:                   &opts.RetryPeriod,
		Cache:                         ctrlcache.Options{DefaultTransform: ctrlcache.TransformStripManagedFields()},
		Controller:                    config.Controller{SkipNameValidation: &opts.SkipControllerNameValidation},
	})
	if err != nil {
		return fmt.Errorf("creating controller manager: %w", err)
	}
	// The probes, served by Run for the whole process, ask t for this
	// term's caches.
	mgr = t.track(mgr)

	var provider cloudprovider.CloudProvider
	var extras []manager.Runnable
	var awsp *awsParts
	switch opts.CloudProvider {
	case "", "kwok":
		kp, err := newKWOKProvider(metrics.CountWrites(mgr.GetClient(), "kwok-provider"), mgr.GetAPIReader(), mgr.GetEventRecorderFor("nodewright"), opts.KWOK)
		if err != nil {
			return err
		}
		provider = kp
		// The interruptions kwok's fault injection issues take the path AWS's
		// queue feeds, so that path is rehearsed without AWS.
		extras = append(extras, kp.Agent(), &interruption.Controller{Client: metrics.CountWrites(mgr.GetClient(), "interruption"), Source: kp.Interruptions(),
			Recorder: mgr.GetEventRecorderFor("nodewright"), Unavailable: kp.MarkUnavailable})
	case "aws":
		if awsp, err = newAWSProvider(ctx, mgr, cfg, opts.AWS); err != nil {
			return err
		}
		provider = awsp.provider
		extras = append(extras, awsp.refresher)
		if awsp.interruption != nil {
			extras = append(extras, awsp.interruption)
		}
		if err := awsp.nodeClass.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the EC2NodeClass controller: %w", err)
		}
	default:
		return fmt.Errorf("--cloud-provider %q: use kwok or aws", opts.CloudProvider)
	}
	// Every call is timed and every error counted; the controllers share one
	// provider, so the calls are not told apart by controller.
	provider = metrics.Decorate(provider, "")
	store := learned.NewStore(metrics.CountWrites(direct, "learned-capacity"), opts.Namespace)
	if err := store.Load(ctx, direct); err != nil {
		return err
	}
	// Create judges a claim's types as the solver did, overlays and learned
	// capacity included, or it would refuse the claims they made fit.
	if !cloudprovider.SetTypeView(provider, provisioning.TypeView(mgr.GetClient(), store)) {
		return fmt.Errorf("cloud provider %q takes no type view", provider.Name())
	}
	// From here on, what acts as leader waits for the learned capacities to
	// be read again on election (see reloadOnElection).
	if mgr, err = reloadOnElection(mgr, store, direct); err != nil {
		return err
	}
	if err := nodeclaim.SetupIndexes(ctx, mgr); err != nil {
		return err
	}
	if err := termination.SetupIndexes(ctx, mgr); err != nil {
		return err
	}
	// The provisioner, the disruption loop and the drains' room check read
	// the whole cluster each pass; from the stores they do so without a copy.
	stores, err := observe.CacheStores(ctx, mgr.GetCache())
	if err != nil {
		return fmt.Errorf("reading the cache's stores: %w", err)
	}
	recorder := mgr.GetEventRecorderFor("nodewright")

	opts.Lifecycle.NominationGrace = opts.Provisioning.NominationGrace
	opts.Lifecycle.ReleaseDisplaced = opts.Provisioning.ReplanDisplaced
	opts.Provisioning.MarkDisplaced = opts.Lifecycle.NominateDisplaced && !opts.Lifecycle.WriteNominatedNodeName
	lifecycle := &nodeclaim.Controller{Client: metrics.CountWrites(mgr.GetClient(), "lifecycle"), Cloud: provider, Learned: store, Recorder: recorder, Opts: opts.Lifecycle}
	if err := lifecycle.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the NodeClaim lifecycle controller: %w", err)
	}
	drain := &termination.Controller{Client: metrics.CountWrites(mgr.GetClient(), "termination"), Recorder: recorder, Opts: opts.Termination,
		Room: &termination.Room{Client: mgr.GetClient(), Cloud: provider, Learned: store, MaxAge: 2 * time.Second, Stores: stores}}
	if err := drain.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the termination controller: %w", err)
	}
	poolStatus := &nodepool.Controller{Client: metrics.CountWrites(mgr.GetClient(), "nodepool-status"), Cloud: provider}
	if err := poolStatus.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the NodePool status controller: %w", err)
	}
	if err := (&nodeoverlay.Controller{Client: metrics.CountWrites(mgr.GetClient(), "nodeoverlay-status")}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the NodeOverlay status controller: %w", err)
	}
	if err := (&staticpool.Controller{Client: metrics.CountWrites(mgr.GetClient(), "static-nodepool"), Cloud: provider, Learned: store, Recorder: recorder}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the static NodePool controller: %w", err)
	}
	prov := provisioning.New(metrics.CountWrites(mgr.GetClient(), "provisioner"), mgr.GetAPIReader(), provider, store, recorder, opts.Provisioning)
	prov.Stores = stores
	if err := mgr.Add(prov); err != nil {
		return err
	}
	if err := watchForProvisioning(ctx, mgr, prov); err != nil {
		return err
	}
	gc := &nodeclaim.GarbageCollector{Client: metrics.CountWrites(mgr.GetClient(), "garbage-collector"), APIReader: mgr.GetAPIReader(), Cloud: provider,
		Recorder: recorder, Interval: opts.GCInterval, Grace: opts.GCInterval}
	if err := mgr.Add(gc); err != nil {
		return err
	}
	opts.Disruption.NominationGrace = opts.Provisioning.NominationGrace
	disrupt := &disruption.Controller{Client: metrics.CountWrites(mgr.GetClient(), "disruption"), Cloud: provider, Learned: store, Recorder: recorder, Opts: opts.Disruption, Stores: stores}
	podInformer, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("pod informer for the disruption controller: %w", err)
	}
	if err := disrupt.WatchPods(podInformer); err != nil {
		return err
	}
	if err := mgr.Add(disrupt); err != nil {
		return err
	}
	collector := metrics.NewCollector(mgr.GetCache())
	collector.Stores = stores
	if err := mgr.Add(collector); err != nil {
		return err
	}
	for _, r := range extras {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	if awsp != nil {
		awsp.nodeClass.OnReady = prov.Batcher.Trigger
	}
	logger.Info("starting nodewright controller", "cloudProvider", provider.Name(), "leaderElection", opts.LeaderElect, "namespace", opts.Namespace,
		"metrics", opts.MetricsAddr, "probes", opts.ProbeAddr)
	return mgr.Start(ctx)
}

func newKWOKProvider(c client.Client, live client.Reader, rec record.EventRecorder, o KWOKOptions) (*kwok.Provider, error) {
	po := kwok.ProviderOptions{DefaultFaults: o.Faults, FaultSeed: o.FaultSeed, LiveReader: live, Recorder: rec}
	po.RepairToleration = o.RepairToleration
	if o.CatalogFile != "" {
		f, err := os.Open(o.CatalogFile)
		if err != nil {
			return nil, fmt.Errorf("opening instance-type catalog: %w", err)
		}
		defer f.Close()
		cat, err := catalog.Read(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.CatalogFile, err)
		}
		po.Catalog = cat
	}
	if o.ActualVMMemoryOverheadPercent >= 0 {
		v := o.ActualVMMemoryOverheadPercent
		po.ActualVMMemoryOverheadPercent = &v
	}
	return kwok.New(c, po)
}

// ensureNamespace creates the controller's namespace when it can; in a
// cluster it normally exists already.
func ensureNamespace(ctx context.Context, c client.Client, ns string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsForbidden(err) {
		return nil
	}
	return fmt.Errorf("creating namespace %s: %w", ns, err)
}

// watchForProvisioning triggers a provisioning batch on the events that can
// change what pending pods need: a pod becoming unschedulable, a NodeClaim
// or node going away, a NodePool or NodeOverlay changing.
func watchForProvisioning(ctx context.Context, mgr manager.Manager, prov *provisioning.Provisioner) error {
	trigger := func(any) { prov.Batcher.Trigger() }
	untried := prov.Opts.UntriedAfter
	podHandler := cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			p, ok := o.(*corev1.Pod)
			if !ok {
				return
			}
			if p.Spec.NodeName == "" && !snapshot.IsDaemonSetPod(p) {
				prov.OnArrival()
			}
			if snapshot.Provisionable(p) {
				prov.OnPod(p)
			} else if untried > 0 && p.Spec.NodeName == "" {
				// Come back when the pod may be planned without the
				// scheduler's verdict.
				uid := p.UID
				time.AfterFunc(untried, func() { prov.OnUntriedDue(uid) })
			}
		},
		UpdateFunc: func(_, o any) {
			if p, ok := o.(*corev1.Pod); ok && snapshot.Provisionable(p) {
				prov.OnPod(p)
			}
		},
	}
	onDelete := cache.ResourceEventHandlerFuncs{DeleteFunc: trigger}
	// A NodeClaim whose deletion starts has pods that need a place before
	// its drain evicts them (snapshot.Options.MoveDraining).
	onClaim := cache.ResourceEventHandlerFuncs{DeleteFunc: trigger, UpdateFunc: func(old, o any) {
		was, okOld := old.(*karpv1.NodeClaim)
		is, ok := o.(*karpv1.NodeClaim)
		if okOld && ok && was.DeletionTimestamp == nil && is.DeletionTimestamp != nil {
			trigger(o)
		}
	}}
	onChange := cache.ResourceEventHandlerFuncs{AddFunc: trigger, UpdateFunc: func(_, o any) { trigger(o) }, DeleteFunc: trigger}
	for _, w := range []struct {
		obj     client.Object
		handler cache.ResourceEventHandler
	}{
		{&corev1.Pod{}, podHandler},
		{&karpv1.NodeClaim{}, onClaim},
		{&corev1.Node{}, onDelete},
		{&karpv1.NodePool{}, onChange},
		{&karpv1alpha1.NodeOverlay{}, onChange},
		{&kwokv1alpha1.KWOKNodeClass{}, onChange},
	} {
		inf, err := mgr.GetCache().GetInformer(ctx, w.obj)
		if err != nil {
			return fmt.Errorf("watching %T: %w", w.obj, err)
		}
		if _, err := inf.AddEventHandler(w.handler); err != nil {
			return fmt.Errorf("watching %T: %w", w.obj, err)
		}
	}
	return nil
}

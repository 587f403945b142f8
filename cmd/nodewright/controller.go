package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	uzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/solver"
)

func controllerCommand() *cobra.Command {
	o := operator.DefaultOptions()
	var logFormat, logLevel, minValuesPolicy, preferencePolicy string
	var faults faultFlags
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the autoscaler against a cluster (in cluster, or with --kubeconfig)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(logFormat, logLevel)
			if err != nil {
				return err
			}
			ctrl.SetLogger(logger)
			f, err := faults.parse()
			if err != nil {
				return err
			}
			o.KWOK.Faults, o.KWOK.FaultSeed = f, faults.seed
			policies, err := solver.ParsePolicies(minValuesPolicy, preferencePolicy)
			if err != nil {
				return err
			}
			o.Provisioning.Policies, o.Disruption.Policies = policies, policies
			if o.KWOK.RepairToleration <= 0 {
				return fmt.Errorf("--kwok-repair-toleration %v: give a positive duration, such as 30m (Karpenter's)", o.KWOK.RepairToleration)
			}
			if o.Provisioning.EarlyLaunch < 0 {
				return fmt.Errorf("--early-launch-interval %v: give a positive duration, or 0 to launch only when a batch closes", o.Provisioning.EarlyLaunch)
			}
			if f := o.Provisioning.EarlyFill; f <= 0 || f > 1 {
				return fmt.Errorf("--early-launch-fill %v: give a share of a node above 0 and at most 1, such as %v", f, provisioning.DefaultEarlyFill)
			}
			if o.Lifecycle.MaxConcurrentReconciles < 1 {
				return fmt.Errorf("--nodeclaim-workers %d: give at least 1", o.Lifecycle.MaxConcurrentReconciles)
			}
			return operator.Run(log.IntoContext(cmd.Context(), logger), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file; empty means in-cluster configuration or $KUBECONFIG")
	fl.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace of the leader lease and the learned-capacity ConfigMap")
	fl.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect a leader so that only one replica acts")
	fl.DurationVar(&o.LeaseDuration, "leader-lease-duration", o.LeaseDuration, "how long a leader lease lasts without renewal")
	fl.DurationVar(&o.RenewDeadline, "leader-renew-deadline", o.RenewDeadline, "how long the leader tries to renew before giving up")
	fl.DurationVar(&o.RetryPeriod, "leader-retry-period", o.RetryPeriod, "how often candidates try to take the lease")
	fl.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "address of the Prometheus metrics endpoint; 0 disables it")
	fl.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "address of the /healthz and /readyz probes; 0 disables them")
	fl.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "steady requests per second to the API server")
	fl.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "request burst to the API server")
	fl.DurationVar(&o.Provisioning.BatchIdle, "batch-idle-duration", o.Provisioning.BatchIdle, "close a batch of pending pods after this long without new ones")
	fl.DurationVar(&o.Provisioning.BatchMax, "batch-max-duration", o.Provisioning.BatchMax, "close a batch of pending pods this long after it opened")
	fl.DurationVar(&o.Provisioning.EarlyLaunch, "early-launch-interval", o.Provisioning.EarlyLaunch, "while a batch is open, plan its pods this often and launch the NodeClaims they fill (--early-launch-fill) before it closes, such as 1s; 0 launches every NodeClaim when a batch closes, as Karpenter does")
	fl.Float64Var(&o.Provisioning.EarlyFill, "early-launch-fill", o.Provisioning.EarlyFill, "share of the instance type the solver sized a NodeClaim for that its pods must fill (CPU, memory, pods or another resource) to launch while pods keep coming; part-filled ones wait for more pods, up to --batch-max-duration")
	fl.DurationVar(&o.Provisioning.UntriedAfter, "provision-untried-pods-after", o.Provisioning.UntriedAfter, "also plan pending pods kube-scheduler has not tried this long after creation; 0 waits for its Unschedulable verdict, as Karpenter does")
	fl.DurationVar(&o.Provisioning.NominationGrace, "nomination-grace", o.Provisioning.NominationGrace, "keep pods reserved on a new node this long after it initialized")
	fl.BoolVar(&o.Provisioning.ReplanDisplaced, "replan-displaced-pods", o.Provisioning.ReplanDisplaced, "plan pods again as soon as the pods bound to their initialized node leave no room for them, instead of after --nomination-grace (false: hold them for the grace)")
	fl.BoolVar(&o.Lifecycle.WriteNominatedNodeName, "nominate-pods-to-nodes", o.Lifecycle.WriteNominatedNodeName, "when a new node registers, write its name into status.nominatedNodeName of the pods planned for it, so kube-scheduler places them as planned (fewer extra nodes in a burst, slower binding; docs/provisioning.md)")
	fl.BoolVar(&o.Lifecycle.NominateDisplaced, "nominate-displaced-pods", o.Lifecycle.NominateDisplaced, "write a new node's name into status.nominatedNodeName of the pods planned for it after kube-scheduler filled their first node with others, so it keeps their room (no effect with --nominate-pods-to-nodes, which writes it for every planned pod)")
	fl.IntVar(&o.Lifecycle.MaxConcurrentReconciles, "nodeclaim-workers", o.Lifecycle.MaxConcurrentReconciles, "NodeClaims launched, registered and initialized at once; each waits on the cloud provider and the API server, so a burst of thousands of NodeClaims needs many")
	fl.DurationVar(&o.Lifecycle.LaunchTimeout, "launch-timeout", o.Lifecycle.LaunchTimeout, "delete a NodeClaim whose instance could not be launched for this long")
	fl.DurationVar(&o.Lifecycle.RegistrationTimeout, "registration-timeout", o.Lifecycle.RegistrationTimeout, "delete a NodeClaim whose node did not register this long after launch")
	fl.DurationVar(&o.Lifecycle.InitializationTimeout, "initialization-timeout", o.Lifecycle.InitializationTimeout, "delete a NodeClaim whose node did not initialize this long after registering; 0 waits for ever")
	fl.DurationVar(&o.Termination.StuckAfter, "drain-stuck-pod-timeout", o.Termination.StuckAfter, "stop waiting for a terminating pod on a draining node this long past its deletion deadline")
	fl.DurationVar(&o.Termination.EvictionRetryMax, "eviction-retry-max-delay", o.Termination.EvictionRetryMax, "longest wait between retries of an eviction that a PodDisruptionBudget refused")
	fl.DurationVar(&o.Termination.RoomWait, "drain-room-wait", o.Termination.RoomWait, "hold the eviction of a pod no ready node has room for while new capacity starts, up to this long after the NodeClaim's deletion; 0 evicts at once")
	fl.DurationVar(&o.GCInterval, "gc-interval", o.GCInterval, "how often leaked instances and orphaned NodeClaims are looked for")
	fl.DurationVar(&o.Disruption.Interval, "disruption-interval", o.Disruption.Interval, "how often the disruption loop looks for nodes to expire, replace, delete or consolidate")
	fl.BoolVar(&o.Disruption.SpotToSpot, "spot-to-spot-consolidation", o.Disruption.SpotToSpot, "let consolidation replace a spot node by a cheaper spot node (off: spot nodes are only deleted)")
	fl.IntVar(&o.Disruption.SpotToSpotMinTypes, "spot-to-spot-min-instance-types", 15, "spot-to-spot consolidation replaces a single spot node only when this many instance types are cheaper, and launches the replacement from that many of the cheapest (Karpenter's 15)")
	fl.DurationVar(&o.Disruption.ValidationDelay, "consolidation-validation-delay", o.Disruption.ValidationDelay, "carry out emptiness and consolidation only when the loops of this long decide them again; 0 acts at once")
	fl.DurationVar(&o.Disruption.ReplacementTimeout, "replacement-timeout", o.Disruption.ReplacementTimeout, "give up a disruption whose replacement nodes have not initialized within this long, keeping the old nodes")
	fl.StringVar(&minValuesPolicy, "min-values-policy", "Strict", "Strict: a pod no NodeClaim can take while keeping its NodePool's minValues is not provisioned for; BestEffort: it is, with minValues lowered on that NodeClaim (annotated karpenter.sh/nodeclaim-min-values-relaxed)")
	fl.StringVar(&preferencePolicy, "preference-policy", "Respect", "Respect: preferred affinities, ScheduleAnyway spreads and PreferNoSchedule taints are held until a pod fits nowhere; Ignore: planning disregards them")
	fl.StringVar(&o.KWOK.CatalogFile, "kwok-catalog", "", "JSON instance-type catalog for the kwok provider (docs/catalog.md); empty is the built-in one")
	fl.Float64Var(&o.KWOK.ActualVMMemoryOverheadPercent, "kwok-actual-vm-memory-overhead", -1, "share of memory (0-1) simulated machines really lose to the hypervisor; negative means the model's 0.075")
	fl.DurationVar(&o.KWOK.RepairToleration, "kwok-repair-toleration", o.KWOK.RepairToleration, "how long a simulated node may be not Ready (Ready False or Unknown) before node repair replaces it; Karpenter's is 30m")
	faults.register(cmd)
	fl.StringVar(&o.CloudProvider, "cloud-provider", o.CloudProvider, "where machines come from: kwok (simulated nodes on a local cluster) or aws (EC2; docs/aws.md)")
	fl.StringVar(&o.AWS.ClusterName, "cluster-name", "", "aws: the EKS cluster's name; tags and finds this cluster's instances")
	fl.StringVar(&o.AWS.ClusterEndpoint, "cluster-endpoint", "", "aws: the API server URL nodes join; empty asks EKS DescribeCluster")
	fl.StringVar(&o.AWS.ClusterCABundle, "cluster-ca-bundle", "", "aws: the cluster CA (PEM or base64) nodes trust; empty is the controller's own, or EKS DescribeCluster's")
	fl.StringVar(&o.AWS.ClusterCIDR, "cluster-cidr", "", "aws: the service CIDR (AL2023's nodeadm needs it); empty asks EKS DescribeCluster")
	fl.BoolVar(&o.AWS.IsolatedVPC, "isolated-vpc", false, "aws: the VPC cannot reach the public Pricing API; use the built-in prices")
	fl.StringVar(&o.AWS.InterruptionQueue, "interruption-queue", "", "aws: SQS queue of EC2 interruption events from EventBridge; empty handles none")
	fl.Float64Var(&o.AWS.VMMemoryOverheadPercent, "vm-memory-overhead-percent", o.AWS.VMMemoryOverheadPercent, "aws: share of memory (0-1) assumed lost to the hypervisor")
	fl.IntVar(&o.AWS.ReservedENIs, "reserved-enis", 0, "aws: network interfaces per instance kept from pods when computing max pods")
	fl.DurationVar(&o.AWS.NodeClassInterval, "ec2nodeclass-interval", o.AWS.NodeClassInterval, "aws: how often each EC2NodeClass's subnets, security groups and AMIs are resolved again")
	fl.StringVar(&o.AWS.KubernetesVersion, "kubernetes-version", "", "aws: minor version (1.34) that chooses the images AMI aliases name; empty asks the API server")
	fl.StringVar(&logFormat, "log-format", "json", "log format: json or console")
	fl.StringVar(&logLevel, "log-level", "info", "log level: debug, info or error")
	return cmd
}

func newLogger(format, level string) (logr.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return logr.Logger{}, fmt.Errorf("--log-level %q: use debug, info or error", level)
	}
	opts := []zap.Opts{zap.Level(uzap.NewAtomicLevelAt(lvl))}
	switch format {
	case "json":
		opts = append(opts, zap.UseDevMode(false), zap.JSONEncoder(func(c *zapcore.EncoderConfig) {
			c.TimeKey = "time"
			c.EncodeTime = zapcore.RFC3339NanoTimeEncoder
		}))
	case "console":
		opts = append(opts, zap.UseDevMode(true), zap.ConsoleEncoder())
	default:
		return logr.Logger{}, fmt.Errorf("--log-format %q: use json or console", format)
	}
	return zap.New(opts...), nil
}

// faultFlags set the kwok provider's default faults.
type faultFlags struct {
	launchErrors      int32
	launchErrorPct    int32
	deleteErrorPct    int32
	throttledPct      int32
	lostResponsePct   int32
	seed              int64
	registrationDelay time.Duration
	notReadyAfter     time.Duration
	notReadyFor       time.Duration
	agentTaints       []string
	ice               []string
}

func (f *faultFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Int32Var(&f.launchErrors, "kwok-launch-errors", 0, "fail this many launches of each NodeClaim before succeeding")
	fl.Int32Var(&f.launchErrorPct, "kwok-launch-error-percent", 0, "fail this share (0-100) of launch calls, drawn at random per call")
	fl.Int32Var(&f.deleteErrorPct, "kwok-delete-error-percent", 0, "fail this share (0-100) of delete calls, drawn at random per call")
	fl.Int32Var(&f.throttledPct, "kwok-throttled-percent", 0, "make this share (0-100) of the injected launch and delete errors throttling errors (retry after 1s)")
	fl.Int32Var(&f.lostResponsePct, "kwok-lost-response-percent", 0, "make this share (0-100) of the other injected errors come after the call took effect, as a lost response")
	fl.Int64Var(&f.seed, "kwok-fault-seed", 1, "seed of the draws of --kwok-*-error-percent and the classes' error percentages; every injected error names it")
	fl.DurationVar(&f.registrationDelay, "kwok-registration-delay", 0, "time from launch until a simulated node registers")
	fl.DurationVar(&f.notReadyAfter, "kwok-not-ready-after", 0, "with --kwok-not-ready-for: simulate a kubelet restart this long after registration")
	fl.DurationVar(&f.notReadyFor, "kwok-not-ready-for", 0, "how long a simulated kubelet restart keeps the node NotReady")
	fl.StringArrayVar(&f.agentTaints, "kwok-agent-taint", nil, "key=value:Effect@delay: a taint simulated nodes register with and an agent removes after delay (repeatable)")
	fl.StringArrayVar(&f.ice, "kwok-insufficient-capacity", nil, "instanceType/zone/capacityType that reports insufficient capacity; empty parts match anything (repeatable)")
}

func (f *faultFlags) parse() (kwokv1alpha1.KWOKFaults, error) {
	var out kwokv1alpha1.KWOKFaults
	if f.launchErrors > 0 {
		out.LaunchErrors = &f.launchErrors
	}
	for _, p := range []struct {
		flag  string
		value *int32
		field **int32
	}{
		{"--kwok-launch-error-percent", &f.launchErrorPct, &out.LaunchErrorPercent},
		{"--kwok-delete-error-percent", &f.deleteErrorPct, &out.DeleteErrorPercent},
		{"--kwok-throttled-percent", &f.throttledPct, &out.ThrottledPercent},
		{"--kwok-lost-response-percent", &f.lostResponsePct, &out.LostResponsePercent},
	} {
		if *p.value < 0 || *p.value > 100 {
			return out, fmt.Errorf("%s %d: give a percentage from 0 to 100", p.flag, *p.value)
		}
		if *p.value > 0 {
			*p.field = p.value
		}
	}
	if f.registrationDelay > 0 {
		out.RegistrationDelay = &metav1.Duration{Duration: f.registrationDelay}
	}
	if f.notReadyFor > 0 {
		out.NotReady = &kwokv1alpha1.KWOKNotReadyFault{After: metav1.Duration{Duration: f.notReadyAfter}, For: metav1.Duration{Duration: f.notReadyFor}}
	}
	for _, s := range f.agentTaints {
		spec, delay, ok := strings.Cut(s, "@")
		kv, effect, ok2 := strings.Cut(spec, ":")
		d, err := time.ParseDuration(delay)
		if !ok || !ok2 || err != nil {
			return out, fmt.Errorf("--kwok-agent-taint %q: write key=value:Effect@delay, e.g. node.cilium.io/agent-not-ready=true:NoSchedule@20s", s)
		}
		k, v, _ := strings.Cut(kv, "=")
		out.AgentTaints = append(out.AgentTaints, kwokv1alpha1.KWOKAgentTaint{
			Key: k, Value: v, Effect: corev1.TaintEffect(effect), RemoveAfter: &metav1.Duration{Duration: d},
		})
	}
	for _, s := range f.ice {
		parts := strings.Split(s, "/")
		if len(parts) != 3 {
			return out, fmt.Errorf("--kwok-insufficient-capacity %q: write instanceType/zone/capacityType, e.g. m5.large/zone-a/spot or m5.large//", s)
		}
		out.InsufficientCapacity = append(out.InsufficientCapacity, kwokv1alpha1.KWOKOfferingSelector{InstanceType: parts[0], Zone: parts[1], CapacityType: parts[2]})
	}
	return out, nil
}

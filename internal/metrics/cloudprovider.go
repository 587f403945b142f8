package metrics

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/instancetype"
)

const labelInstanceType = "instance_type"

var (
	cloudDuration = newHistogramVec(Spec{Name: "karpenter_cloudprovider_duration_seconds",
		Help:   "Duration of cloud provider method calls, by controller, method and provider.",
		Labels: []string{labelController, "method", "provider"}}, durationBuckets())
	cloudErrors = newCounterVec(Spec{Name: "karpenter_cloudprovider_errors_total",
		Help:   "Number of errors returned from cloud provider calls, by controller, method, provider and error kind.",
		Labels: []string{labelController, "method", "provider", "error"}})
	instanceTypeCPU = newGaugeVec(Spec{Name: "karpenter_cloudprovider_instance_type_cpu_cores",
		Help: "vCPU cores of an instance type.", Labels: []string{labelInstanceType}})
	instanceTypeMemory = newGaugeVec(Spec{Name: "karpenter_cloudprovider_instance_type_memory_bytes",
		Help: "Memory, in bytes, of an instance type.", Labels: []string{labelInstanceType}})
	offeringAvailable = newGaugeVec(Spec{Name: "karpenter_cloudprovider_instance_type_offering_available",
		Help:   "Whether an offering (instance type, capacity type, zone) is available: 1 or 0.",
		Labels: []string{labelInstanceType, labelCapacityType, labelZone}})
	offeringPrice = newGaugeVec(Spec{Name: "karpenter_cloudprovider_instance_type_offering_price_estimate",
		Help:   "Estimated hourly price of an offering (instance type, capacity type, zone) used to compare costs.",
		Labels: []string{labelInstanceType, labelCapacityType, labelZone}})
)

// instanceTypesEvery bounds how often one NodePool's instance types are
// written to the gauges: provisioning and disruption ask for them every few
// seconds, and the answer changes with prices and capacity, not that fast.
const instanceTypesEvery = time.Minute

// Decorate wraps a cloud provider so that every call is timed and every
// error counted under the name of the controller that makes it, and the
// instance types it returns are published. Give each controller its own
// decorator; do not decorate a decorated provider (calls would count twice).
func Decorate(cp cloudprovider.CloudProvider, controller string) cloudprovider.CloudProvider {
	return &decorated{CloudProvider: cp, controller: controller, published: map[string]time.Time{}}
}

type decorated struct {
	cloudprovider.CloudProvider
	controller string

	mu        sync.Mutex
	published map[string]time.Time // NodePool name -> when its types were last published
}

// Unwrap returns the decorated provider, so that optional interfaces
// (cloudprovider.Repairer) are found through the decorator.
func (d *decorated) Unwrap() cloudprovider.CloudProvider { return d.CloudProvider }

// observe times a call that began at start and counts its error.
func (d *decorated) observe(method string, start time.Time, err error) {
	provider := d.CloudProvider.Name()
	cloudDuration.WithLabelValues(d.controller, method, provider).Observe(time.Since(start).Seconds())
	if err != nil {
		cloudErrors.WithLabelValues(d.controller, method, provider, ErrorKind(err)).Inc()
	}
}

// ErrorKind names a cloud provider error as Karpenter's error label does;
// "" for any other error.
func ErrorKind(err error) string {
	var notReady *cloudprovider.NodeClassNotReadyError
	switch {
	case cloudprovider.IsInsufficientCapacity(err):
		return "InsufficientCapacityError"
	case cloudprovider.IsNotFound(err):
		return "NodeClaimNotFoundError"
	case errors.As(err, &notReady):
		return "NodeClassNotReadyError"
	case cloudprovider.IsThrottled(err):
		return "ThrottlingError"
	}
	return ""
}

func (d *decorated) InstanceTypes(ctx context.Context, np *karpv1.NodePool) ([]*instancetype.InstanceType, error) {
	start := time.Now()
	its, err := d.CloudProvider.InstanceTypes(ctx, np)
	d.observe("GetInstanceTypes", start, err)
	if err == nil && d.due(np.Name, start) {
		publishInstanceTypes(its)
	}
	return its, err
}

func (d *decorated) Create(ctx context.Context, nc *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	start := time.Now()
	out, err := d.CloudProvider.Create(ctx, nc)
	d.observe("Create", start, err)
	return out, err
}

func (d *decorated) Delete(ctx context.Context, nc *karpv1.NodeClaim) error {
	start := time.Now()
	err := d.CloudProvider.Delete(ctx, nc)
	d.observe("Delete", start, err)
	return err
}

func (d *decorated) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	start := time.Now()
	out, err := d.CloudProvider.Get(ctx, providerID)
	d.observe("Get", start, err)
	return out, err
}

func (d *decorated) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	start := time.Now()
	out, err := d.CloudProvider.List(ctx)
	d.observe("List", start, err)
	return out, err
}

func (d *decorated) IsDrifted(ctx context.Context, nc *karpv1.NodeClaim) (string, error) {
	start := time.Now()
	out, err := d.CloudProvider.IsDrifted(ctx, nc)
	d.observe("IsDrifted", start, err)
	return out, err
}

// due reports whether pool's instance types should be published now, and
// notes that they are.
func (d *decorated) due(pool string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if last, ok := d.published[pool]; ok && now.Sub(last) < instanceTypesEvery {
		return false
	}
	d.published[pool] = now
	return true
}

func publishInstanceTypes(its []*instancetype.InstanceType) {
	for _, it := range its {
		if cpu, ok := it.Capacity[corev1.ResourceCPU]; ok {
			instanceTypeCPU.WithLabelValues(it.Name).Set(float64(cpu.MilliValue()) / 1000)
		}
		if mem, ok := it.Capacity[corev1.ResourceMemory]; ok {
			instanceTypeMemory.WithLabelValues(it.Name).Set(float64(mem.Value()))
		}
		for _, o := range it.Offerings {
			available := 0.0
			if o.Available {
				available = 1
			}
			offeringAvailable.WithLabelValues(it.Name, o.CapacityType, o.Zone).Set(available)
			offeringPrice.WithLabelValues(it.Name, o.CapacityType, o.Zone).Set(o.Price)
		}
	}
}

package plancheck

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodewright/nodewright/internal/instancetype"
)

// amount is a quantity in the unit kube-scheduler's NodeResourcesFit compares:
// millicores for CPU, base units (bytes, counts) for everything else.
func amount(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// format writes an amount back in the unit people read for the resource.
func format(name corev1.ResourceName, v int64) string {
	if name == corev1.ResourceCPU {
		return instancetype.Format(name, *resource.NewMilliQuantity(v, resource.DecimalSI))
	}
	return instancetype.Format(name, *resource.NewQuantity(v, resource.BinarySI))
}

func sortedNames(rl corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(rl))
	for n := range rl {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// checkResources is kube-scheduler's NodeResourcesFit filter: one more pod
// than the node's pods allocatable is refused, and so is any resource the pod
// requests (more than zero of) beyond what the pods bound so far leave.
// Resources the pod does not request are not compared, so an overcommitted
// node still takes pods that need none of the overcommitted resource.
func (ck *checker) checkResources(p *corev1.Pod, n *node) {
	alloc := n.obj.Status.Allocatable
	maxPods := amount(corev1.ResourcePods, alloc[corev1.ResourcePods])
	if int64(len(n.pods))+1 > maxPods {
		ck.report(p, n.name, "resources", fmt.Sprintf("pods: %d already bound + 1 > allocatable %d", len(n.pods), maxPods))
	}
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	for _, name := range sortedNames(req) {
		want := amount(name, req[name])
		if want <= 0 {
			continue
		}
		have := amount(name, alloc[name])
		if used := n.used[name]; used+want > have {
			ck.report(p, n.name, "resources", fmt.Sprintf("%s: requests %s + %s already bound = %s > allocatable %s",
				name, format(name, want), format(name, used), format(name, used+want), format(name, have)))
		}
	}
}

// hostPort is one host port a container asks for, normalized as
// kube-scheduler's NodePorts filter reads it.
type hostPort struct {
	ip       string
	port     int32
	protocol corev1.Protocol
}

func (h hostPort) String() string {
	return fmt.Sprintf("%s:%d/%s", h.ip, h.port, h.protocol)
}

// conflicts: the same port and protocol clash when either address is the
// wildcard or both are the same address.
func (h hostPort) conflicts(o hostPort) bool {
	if h.port != o.port || h.protocol != o.protocol {
		return false
	}
	return h.ip == o.ip || h.ip == "0.0.0.0" || o.ip == "0.0.0.0"
}

// podHostPorts lists the host ports of the pod's containers and init
// containers (sidecars hold theirs for the pod's life); an empty address is
// the wildcard and an empty protocol TCP, as the API server defaults them.
func podHostPorts(p *corev1.Pod) []hostPort {
	var out []hostPort
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, port := range c.Ports {
				if port.HostPort <= 0 {
					continue
				}
				hp := hostPort{ip: port.HostIP, port: port.HostPort, protocol: port.Protocol}
				if hp.ip == "" {
					hp.ip = "0.0.0.0"
				}
				if hp.protocol == "" {
					hp.protocol = corev1.ProtocolTCP
				}
				out = append(out, hp)
			}
		}
	}
	return out
}

// checkHostPorts is kube-scheduler's NodePorts filter.
func (ck *checker) checkHostPorts(p *corev1.Pod, n *node) {
	want := podHostPorts(p)
	if len(want) == 0 {
		return
	}
	for _, bp := range n.pods {
		for _, h := range podHostPorts(bp.pod) {
			for _, w := range want {
				if w.conflicts(h) {
					ck.report(p, n.name, "host-ports", fmt.Sprintf("host port %s clashes with %s of pod %s", w, h, podKey(bp.pod)))
				}
			}
		}
	}
}

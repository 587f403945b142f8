package solver

import (
	"encoding/binary"
	"hash/fnv"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// group is a set of pending pods the solver treats alike: same namespace,
// labels, requests and scheduling constraints. Placing pods group by group is
// what makes a solve linear in the number of distinct shapes, not of pods.
type group struct {
	id   int
	pods []*corev1.Pod
	// spec is the representative pod, preferences turned into requirements
	// according to relax (see relax.go).
	spec    *corev1.Pod
	relaxed int // relaxation steps applied
	// minValuesRelaxed: the group failed every target on minValues, and
	// BestEffort lets it through.
	minValuesRelaxed bool
	namespace        string
	labels           labels.Set
	req              vec
	// terms are the OR'ed node requirement terms; the solver uses the first that
	// fits (Karpenter's order), relaxing to the next on failure.
	reqs scheduling.Requirements
	// blocked says why no node can take the group at all (a missing volume,
	// no satisfiable node affinity term), or is empty.
	blocked     string
	tolerations []corev1.Toleration
	ports       []hostPort
	// owned are the topology groups whose constraint this pod must satisfy;
	// counted are those whose selector matches this pod.
	owned   []*topoGroup
	counted []*topoGroup
	// antiMatch are anti-affinity groups whose selector matches this pod: pods
	// owning them repel it (kube-scheduler's symmetry).
	antiMatch []*topoGroup
	// order keys
	class int
	size  float64
	// typeOK caches, per pool, which instance types the group's requirements
	// allow (nil until computed).
	typeOK [][]bool
	// cursors skip targets that can never take a pod of this group again.
	nodeCursor, binCursor int
	// zeroCursor, dirty and epoch remember which bins had no room at their
	// current price for this group (see place).
	zeroCursor  int
	dirty       []int
	topoRefused []int
	epoch       int
	// templates caches, per pool, a new NodeClaim for the group.
	templates []*binTemplate
	// tooManyResources names requested resources the solver cannot track.
	tooManyResources []string
}

type hostPort struct {
	ip       string
	port     int32
	protocol corev1.Protocol
}

// podRequests are kube-scheduler's: the larger of the summed containers and
// each init container (sidecars included), plus pod overhead.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
}

func podHostPorts(p *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(cs []corev1.Container) {
		for _, c := range cs {
			for _, port := range c.Ports {
				if port.HostPort <= 0 {
					continue
				}
				proto := port.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				ip := port.HostIP
				if ip == "" {
					ip = "0.0.0.0"
				}
				out = append(out, hostPort{ip: ip, port: port.HostPort, protocol: proto})
			}
		}
	}
	add(p.Spec.InitContainers)
	add(p.Spec.Containers)
	return out
}

// conflicts follows kube-scheduler's NodePorts: the same port and protocol
// conflict when either IP is the wildcard or both are equal.
func (h hostPort) conflicts(o hostPort) bool {
	if h.port != o.port || h.protocol != o.protocol {
		return false
	}
	return h.ip == o.ip || h.ip == "0.0.0.0" || o.ip == "0.0.0.0"
}

// groupKey hashes everything that makes two pending pods schedule alike. The
// name, UID and owner do not count.
func groupKey(p *corev1.Pod, volumeKey string) [16]byte {
	h := fnv.New128a()
	w := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	w(p.Namespace)
	writeMap(w, p.Labels)
	writeMap(w, p.Spec.NodeSelector)
	w(volumeKey)
	w(p.Spec.SchedulerName)
	w(strconv.Itoa(int(podPriority(p))))
	// The rest of the scheduling-relevant spec, via its protobuf-free String();
	// generated String methods print every field deterministically.
	if p.Spec.Affinity != nil {
		w(p.Spec.Affinity.String())
	}
	for i := range p.Spec.Tolerations {
		w(p.Spec.Tolerations[i].String())
	}
	for i := range p.Spec.TopologySpreadConstraints {
		w(p.Spec.TopologySpreadConstraints[i].String())
	}
	writeMap(w, sortedList(podRequests(p)))
	for _, hp := range podHostPorts(p) {
		w(hp.ip + "/" + strconv.Itoa(int(hp.port)) + "/" + string(hp.protocol))
	}
	var out [16]byte
	copy(out[:], h.Sum(nil))
	return out
}

func writeMap(w func(string), m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	w(strconv.Itoa(len(keys)))
	for _, k := range keys {
		w(k)
		w(m[k])
	}
}

func sortedList(rl corev1.ResourceList) map[string]string {
	out := make(map[string]string, len(rl))
	for n, q := range rl {
		out[string(n)] = q.String()
	}
	return out
}

func podPriority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

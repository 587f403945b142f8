package solver

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// daemon is a DaemonSet's pod as the solver needs it: what it requests and
// where it runs.
type daemon struct {
	pod         *corev1.Pod
	req         vec
	reqs        []scheduling.Requirements
	tolerations []corev1.Toleration
}

func (s *state) compileDaemons() {
	for _, ds := range s.in.DaemonSets {
		p := &corev1.Pod{Spec: ds.Spec.Template.Spec}
		p.Namespace = ds.Namespace
		p.Labels = ds.Spec.Template.Labels
		p.Name = ds.Name
		d := daemon{pod: p, req: s.ri.vec(podRequests(p)), reqs: scheduling.PodRequirementTerms(p), tolerations: p.Spec.Tolerations}
		d.req[podsIdx] = 1
		s.daemons = append(s.daemons, d)
	}
}

// daemonOverhead sums the requests of the DaemonSet pods that would run on a
// new node of the pool with these requirements: they tolerate its taints and
// one of their node affinity terms is compatible.
func (s *state) daemonOverhead(p *pool, reqs scheduling.Requirements) vec {
	var total vec
	for _, d := range s.daemonsFor(p, reqs) {
		total.add(&d.req)
	}
	return total
}

// daemonsFor lists the DaemonSets whose pods run on a new node of the pool.
func (s *state) daemonsFor(p *pool, reqs scheduling.Requirements) []*daemon {
	var out []*daemon
	for i := range s.daemons {
		d := &s.daemons[i]
		if ok, _ := tolerates(d.tolerations, p.taints, false); !ok {
			continue
		}
		for _, r := range d.reqs {
			if reqs.Compatible(r) == nil {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// recordDaemons counts (or, with sign -1, uncounts) a new node's DaemonSet
// pods in the topology groups that select them, for the keys whose value the
// node already has: they are pods like any other to kube-scheduler.
func (s *state) recordDaemons(t *target, sign int) {
	for _, d := range t.daemonPods {
		for _, tg := range s.topo.groups {
			if !tg.matchesPod(d.pod.Namespace, d.pod.Labels, s.topo.nsLabels) || !s.countsOn(tg, t) {
				continue
			}
			vals, _ := t.domainValues(tg.key)
			if len(vals) != 1 {
				continue
			}
			if sign > 0 {
				tg.record(vals[0])
			} else {
				tg.unrecord(vals[0])
			}
		}
	}
}

// daemonsOn keeps the DaemonSets one of whose node affinity terms a node with
// these requirements (an instance type's included) satisfies.
func daemonsOn(ds []*daemon, reqs scheduling.Requirements) []*daemon {
	var out []*daemon
	for _, d := range ds {
		for _, r := range d.reqs {
			if reqs.Compatible(r) == nil {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

func sameDaemons(a, b []*daemon) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package solver

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// daemon is a DaemonSet's pod as the solver needs it: what it requests and
// where it runs.
type daemon struct {
	req         vec
	reqs        []scheduling.Requirements
	tolerations []corev1.Toleration
}

func (s *state) compileDaemons() {
	for _, ds := range s.in.DaemonSets {
		p := &corev1.Pod{Spec: ds.Spec.Template.Spec}
		p.Namespace = ds.Namespace
		d := daemon{req: s.ri.vec(podRequests(p)), reqs: scheduling.PodRequirementTerms(p), tolerations: p.Spec.Tolerations}
		d.req[podsIdx] = 1
		s.daemons = append(s.daemons, d)
	}
}

// daemonOverhead sums the requests of the DaemonSet pods that would run on a
// new node of the pool with these requirements: they tolerate its taints and
// one of their node affinity terms is compatible.
func (s *state) daemonOverhead(p *pool, reqs scheduling.Requirements) vec {
	var total vec
	for i := range s.daemons {
		d := &s.daemons[i]
		if ok, _ := tolerates(d.tolerations, p.taints, false); !ok {
			continue
		}
		for _, r := range d.reqs {
			if reqs.Compatible(r) == nil {
				total.add(&d.req)
				break
			}
		}
	}
	return total
}

package plancheck_test

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/solver"
)

// describeInput writes the input compactly enough to read in a failure.
func describeInput(in *solver.Input) string {
	var b strings.Builder
	for _, p := range in.NodePools {
		names := make([]string, len(p.InstanceTypes))
		for i, it := range p.InstanceTypes {
			names[i] = it.Name
		}
		fmt.Fprintf(&b, "pool %s weight %d reqs [%s] labels %v taints %v limits %s usage %s types %v\n",
			p.Name, p.Weight, p.Requirements, p.Labels, p.Taints, describeList(p.Limits), describeList(p.Usage), names)
	}
	for _, n := range in.Nodes {
		fmt.Fprintf(&b, "node %s pool %q inflight %v deleting %v labels %v taints %v alloc %s pods %d\n",
			n.Name, n.NodePool, n.InFlight, n.Deleting, n.Labels, n.Taints, describeList(n.Allocatable), len(n.Pods))
		for _, p := range n.Pods {
			fmt.Fprintf(&b, "  %s\n", describePod(p))
		}
	}
	for _, ds := range in.DaemonSets {
		fmt.Fprintf(&b, "daemonset %s: %s\n", ds.Name, describePod(&corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta, Spec: ds.Spec.Template.Spec}))
	}
	for _, p := range in.Pods {
		fmt.Fprintf(&b, "pod %s\n", describePod(p))
	}
	return b.String()
}

func describePod(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s labels %v cpu %s mem %s", p.Namespace, p.Name, p.Labels,
		p.Spec.Containers[0].Resources.Requests.Cpu(), p.Spec.Containers[0].Resources.Requests.Memory())
	if len(p.Spec.NodeSelector) > 0 {
		fmt.Fprintf(&b, " nodeSelector %v", p.Spec.NodeSelector)
	}
	for _, t := range p.Spec.Tolerations {
		fmt.Fprintf(&b, " tolerates %s:%s", t.Key, t.Effect)
	}
	for _, port := range p.Spec.Containers[0].Ports {
		fmt.Fprintf(&b, " hostPort %d", port.HostPort)
	}
	if a := p.Spec.Affinity; a != nil {
		if na := a.NodeAffinity; na != nil {
			if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
				for _, t := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
					fmt.Fprintf(&b, " nodeAffinity%v", t.MatchExpressions)
				}
			}
			for _, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
				fmt.Fprintf(&b, " preferNode(%d)%v", t.Weight, t.Preference.MatchExpressions)
			}
		}
		podTerm := func(kind string, t corev1.PodAffinityTerm) {
			sel, _ := metav1.LabelSelectorAsSelector(t.LabelSelector)
			ns := ""
			if t.NamespaceSelector != nil {
				nsSel, _ := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
				ns = fmt.Sprintf(" namespaceSelector %q", nsSel)
			}
			fmt.Fprintf(&b, " %s(%s %q%s)", kind, t.TopologyKey, sel, ns)
		}
		if pa := a.PodAffinity; pa != nil {
			for _, t := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				podTerm("affinity", t)
			}
			for _, t := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				podTerm("preferAffinity", t.PodAffinityTerm)
			}
		}
		if pa := a.PodAntiAffinity; pa != nil {
			for _, t := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				podTerm("anti", t)
			}
			for _, t := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				podTerm("preferAnti", t.PodAffinityTerm)
			}
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		sel, _ := metav1.LabelSelectorAsSelector(c.LabelSelector)
		md := ""
		if c.MinDomains != nil {
			md = fmt.Sprintf(" minDomains %d", *c.MinDomains)
		}
		fmt.Fprintf(&b, " spread(%s maxSkew %d %s%s %q)", c.TopologyKey, c.MaxSkew, c.WhenUnsatisfiable, md, sel)
	}
	return b.String()
}

func describePlan(plan *solver.Plan) string {
	var b strings.Builder
	for i, c := range plan.NewClaims {
		names := make([]string, 0, 3)
		for j, it := range c.InstanceTypes {
			if j == 3 {
				names = append(names, "...")
				break
			}
			names = append(names, it.Name)
		}
		fmt.Fprintf(&b, "claim %d %s pool %s reqs [%s] types %v requests %s\n", i, c.Hostname, c.NodePool, c.Requirements, names, describeList(c.Requests))
	}
	for _, pl := range plan.Placements {
		where := pl.Node
		if pl.NewClaim >= 0 {
			where = fmt.Sprintf("claim %d", pl.NewClaim)
		}
		fmt.Fprintf(&b, "place %s/%s -> %s\n", pl.Pod.Namespace, pl.Pod.Name, where)
	}
	for _, u := range plan.Unschedulable {
		fmt.Fprintf(&b, "unschedulable %s/%s: %v\n", u.Pod.Namespace, u.Pod.Name, u.Reason)
	}
	return b.String()
}

func describeList(rl corev1.ResourceList) string {
	parts := make([]string, 0, len(rl))
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, "nodes"} {
		if q, ok := rl[name]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}

package solver

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// state is one solve in progress. Nothing outside Solve sees it.
type state struct {
	in    *Input
	ri    *resourceIndex
	pools []*pool
	nodes []*target // existing and in-flight, in name order
	bins  []*target // new claims, in creation order
	// slack[i] is bins[i]'s CPU and memory room at its current price.
	slack     [][2]int64
	binSeq    int // names planned bins uniquely
	topo      *topology
	topoKeys  map[string]bool
	groups    []*group
	volumes   *volumeIndex
	daemons   []daemon
	plan      *Plan
	preferNoS bool // some pool has PreferNoSchedule taints: relaxation may tolerate them
	// bestEffort is Input.MinValuesBestEffort.
	bestEffort bool
	// explaining makes refusals say which constraint and why (slow).
	explaining bool
}

// ephemeralTaints are set by Kubernetes while a node starts; an in-flight node
// will lose them, so they do not keep pods away.
var ephemeralTaints = map[string]bool{
	corev1.TaintNodeNotReady:                         true,
	corev1.TaintNodeUnreachable:                      true,
	"node.cloudprovider.kubernetes.io/uninitialized": true,
	"karpenter.sh/unregistered":                      true,
}

func compile(in *Input) (*state, error) {
	s := &state{in: in, ri: newResourceIndex(), plan: &Plan{}, topoKeys: map[string]bool{}, bestEffort: in.MinValuesBestEffort}
	// Resources: the core four, then what limits and pods name.
	for _, np := range in.NodePools {
		for n := range np.Limits {
			if n != "nodes" {
				s.ri.add(n)
			}
		}
	}
	for _, p := range in.Pods {
		for n := range in.Requests.Of(p) {
			s.ri.add(n)
		}
	}
	s.volumes = newVolumeIndex(in.Volumes)
	nsLabels := map[string]labels.Set{}
	for _, ns := range in.Namespaces {
		nsLabels[ns.Name] = labels.Set(ns.Labels)
	}
	s.topo = newTopology(nsLabels)
	s.compilePools()
	s.compileDaemons()
	s.compileNodes()
	if err := s.compileGroups(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *state) compilePools() {
	nps := make([]*NodePool, len(s.in.NodePools))
	for i := range s.in.NodePools {
		nps[i] = &s.in.NodePools[i]
	}
	sort.SliceStable(nps, func(i, j int) bool {
		if nps[i].Weight != nps[j].Weight {
			return nps[i].Weight > nps[j].Weight
		}
		return nps[i].Name < nps[j].Name
	})
	for i, np := range nps {
		p := &pool{idx: i, np: np}
		p.reqs = np.Requirements.Intersect(scheduling.FromLabels(np.Labels))
		p.reqs.Add(scheduling.NewRequirement("karpenter.sh/nodepool", corev1.NodeSelectorOpIn, np.Name))
		p.taints = np.Taints
		for _, t := range np.Taints {
			if t.Effect == corev1.TaintEffectPreferNoSchedule {
				s.preferNoS = true
			}
		}
		for key, r := range p.reqs {
			if mv := r.MinValues(); mv != nil {
				p.minValues = append(p.minValues, minValue{key: key, min: *mv})
			}
		}
		sort.Slice(p.minValues, func(a, b int) bool { return p.minValues[a].key < p.minValues[b].key })
		// Limits: what is left after existing usage.
		for n, q := range np.Limits {
			if n == "nodes" {
				used := int64(0)
				if u, ok := np.Usage["nodes"]; ok {
					used = u.Value()
				}
				p.remainingNodes = q.Value() - used
				p.nodesLimited = true
				continue
			}
			if i, ok := s.ri.pos[n]; ok {
				p.limited[i] = true
				p.remaining[i] = amount(n, q)
				if u, ok := np.Usage[n]; ok {
					p.remaining[i] -= amount(n, u)
				}
			}
		}
		for _, it := range np.InstanceTypes {
			if err := it.Requirements.Compatible(p.reqs); err != nil {
				continue
			}
			o, ok := it.Offerings.Cheapest(p.reqs)
			if !ok {
				continue
			}
			zp := map[string]float64{}
			for _, off := range it.Offerings {
				if !off.Available || !off.Allowed(p.reqs) {
					continue
				}
				if cur, ok := zp[off.Zone]; !ok || off.Price < cur {
					zp[off.Zone] = off.Price
				}
			}
			p.types = append(p.types, &itype{it: it, alloc: s.ri.vec(it.Allocatable()), capacity: s.ri.vec(it.Capacity), minPrice: o.Price, zonePrice: zp})
		}
		sort.SliceStable(p.types, func(a, b int) bool {
			if p.types[a].minPrice != p.types[b].minPrice {
				return p.types[a].minPrice < p.types[b].minPrice
			}
			return p.types[a].it.Name < p.types[b].it.Name
		})
		p.provided = map[string]bool{corev1.LabelHostname: true}
		for k := range p.reqs {
			p.provided[k] = true
		}
		for i, t := range p.types {
			t.idx = i
			for k := range t.it.Requirements {
				p.provided[k] = true
			}
		}
		s.pools = append(s.pools, p)
	}
}

func (s *state) compileNodes() {
	nodes := make([]*Node, len(s.in.Nodes))
	for i := range s.in.Nodes {
		nodes[i] = &s.in.Nodes[i]
	}
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	poolByName := map[string]*pool{}
	for _, p := range s.pools {
		poolByName[p.np.Name] = p
	}
	for _, n := range nodes {
		t := &target{existing: true, name: n.Name, pool: poolByName[n.NodePool], labels: n.Labels, claim: -1, deleting: n.Deleting}
		if t.labels == nil {
			t.labels = map[string]string{}
		}
		if _, ok := t.labels[corev1.LabelHostname]; !ok {
			withHost := make(map[string]string, len(t.labels)+1)
			for k, v := range t.labels {
				withHost[k] = v
			}
			withHost[corev1.LabelHostname] = n.Name
			t.labels = withHost
		}
		t.avail = s.ri.vec(n.Allocatable)
		startup := map[string]bool{}
		for _, st := range n.StartupTaints {
			startup[st.Key] = true
		}
		for _, taint := range n.Taints {
			if n.InFlight && (startup[taint.Key] || ephemeralTaints[taint.Key]) {
				continue
			}
			t.taints = append(t.taints, taint)
		}
		t.pods = n.Pods
		for _, p := range n.Pods {
			f := s.in.Requests.facts(p)
			r := s.ri.vec(f.requests)
			t.used.add(&r)
			t.used[podsIdx]++
			t.ports = append(t.ports, f.ports...)
		}
		t.avail[podsIdx] = amount(corev1.ResourcePods, n.Allocatable[corev1.ResourcePods])
		s.nodes = append(s.nodes, t)
	}
}

// compileGroups groups pending pods, compiles their constraints and orders the
// groups: pods whose constraints force separate nodes first, then pods with
// other topology constraints, then the rest; larger pods first within each.
func (s *state) compileGroups() error {
	byKey := map[[16]byte]*group{}
	for _, p := range s.in.Pods {
		vreqs, vkey, verr := s.volumes.requirements(p)
		k := groupKey(p, vkey+"|"+verr)
		if g, ok := byKey[k]; ok {
			g.pods = append(g.pods, p)
			continue
		}
		g := &group{id: len(s.groups), pods: []*corev1.Pod{p}, namespace: p.Namespace, labels: labels.Set(p.Labels), blocked: verr}
		if err := s.initGroup(g, p, vreqs, 0); err != nil {
			return err
		}
		byKey[k] = g
		s.groups = append(s.groups, g)
	}
	s.internExistingAntiAffinity()
	for _, tg := range s.topo.groups {
		s.topoKeys[tg.key] = true
	}
	s.linkCounted()
	s.countExisting()
	sort.SliceStable(s.groups, func(i, j int) bool {
		a, b := s.groups[i], s.groups[j]
		if a.class != b.class {
			return a.class < b.class
		}
		if a.size != b.size {
			return a.size > b.size
		}
		return a.id < b.id
	})
	return nil
}

// initGroup compiles a group's constraints from its representative pod at a
// relaxation level.
func (s *state) initGroup(g *group, p *corev1.Pod, vreqs scheduling.Requirements, relaxed int) error {
	if s.in.IgnorePreferences {
		p = withoutPreferences(p, s.preferNoS)
	}
	spec := effectivePod(p, relaxed, s.preferNoS)
	g.spec, g.relaxed = spec, relaxed
	rl := s.in.Requests.Of(p)
	g.tooManyResources = s.ri.unknown(rl)
	g.req = s.ri.vec(rl)
	g.req[podsIdx] = 1
	terms := scheduling.PodRequirementTerms(spec)
	if len(terms) == 0 {
		// No required node affinity term can match any node.
		g.blocked = "no term of spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution can match a node"
		terms = []scheduling.Requirements{{}}
	}
	g.reqs = terms[0]
	if len(vreqs) > 0 {
		g.reqs = g.reqs.Intersect(vreqs)
	}
	g.tolerations = spec.Spec.Tolerations
	g.ports = podHostPorts(p)
	// Spread's nodeAffinityPolicy honours only what the pod requires, not the
	// preferences the solver holds as requirements until relaxed.
	hardSpec, _ := relaxSteps(p, relaxed, s.preferNoS)
	hard := scheduling.PodRequirementTerms(hardSpec)
	owned, err := s.topo.ownedGroups(spec, hard)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	g.owned = owned
	g.class = 2
	for _, tg := range owned {
		if tg.key == corev1.LabelHostname && (tg.kind == antiAffinity || tg.kind == spread) {
			g.class = 0
			break
		}
		g.class = 1
	}
	// Size: the pod's share of a typical node, CPU and memory weighed alike.
	g.size = float64(g.req[0])/1000 + float64(g.req[1])/(2<<30)
	g.typeOK = make([][]bool, len(s.pools))
	return nil
}

// linkCounted records, for each group, the topology groups that count its pods
// and the anti-affinity groups that repel them.
func (s *state) linkCounted() {
	for _, g := range s.groups {
		s.linkGroup(g)
	}
}

func (s *state) linkGroup(g *group) {
	g.counted, g.antiMatch = g.counted[:0], g.antiMatch[:0]
	for _, tg := range s.topo.groups {
		if tg.matchesPod(g.namespace, g.labels, s.topo.nsLabels) {
			g.counted = append(g.counted, tg)
			if tg.kind == antiAffinity && tg.required {
				g.antiMatch = append(g.antiMatch, tg)
			}
		}
	}
}

// countExisting counts the pods already on nodes into the topology groups.
func (s *state) countExisting() {
	for _, tg := range s.topo.groups {
		s.addDomains(tg)
	}
	for _, t := range s.nodes {
		for _, p := range t.pods {
			set := labels.Set(p.Labels)
			owns := map[string]bool{}
			for _, a := range s.requiredAntiTerms(p) {
				owns[a.identity] = true
			}
			for _, tg := range s.topo.groups {
				v, ok := t.labels[tg.key]
				if !ok || !s.countsOn(tg, t) {
					continue
				}
				if tg.matchesPod(p.Namespace, set, s.topo.nsLabels) {
					tg.record(v)
				}
				if tg.kind == antiAffinity && owns[tg.identity] {
					tg.owners[v]++
				}
			}
		}
	}
}

// internExistingAntiAffinity adds the required anti-affinity terms of pods
// already on nodes, so that pending pods they select keep away from them.
func (s *state) internExistingAntiAffinity() {
	for _, t := range s.nodes {
		for _, p := range t.pods {
			for _, a := range s.requiredAntiTerms(p) {
				s.topo.intern(a.group, a.identity)
			}
		}
	}
}

// antiTerm is a compiled required anti-affinity term with its group identity.
type antiTerm struct {
	group    *topoGroup
	identity string
}

// requiredAntiTerms compiles a pod's required anti-affinity terms, named as
// ownedGroups names them, so that a running pod and a pending one with the
// same term share a group.
func (s *state) requiredAntiTerms(p *corev1.Pod) []antiTerm {
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
		return nil
	}
	var out []antiTerm
	for _, term := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		g, id, err := affinityGroup(antiAffinity, term, p)
		if err != nil {
			continue
		}
		g.selfMatch = g.matchesPod(p.Namespace, labels.Set(p.Labels), s.topo.nsLabels)
		g.required = true
		out = append(out, antiTerm{g, fmt.Sprintf("%s|%v|%v", id, g.selfMatch, true)})
	}
	return out
}

// countsOn reports whether a spread group counts pods on this target (its
// node inclusion policies); affinity groups count everywhere.
func (s *state) countsOn(tg *topoGroup, t *target) bool {
	if tg.kind != spread {
		return true
	}
	if len(tg.nodeFilter) > 0 {
		if t.existing {
			if !filterMatches(tg.nodeFilter, t.labels) {
				return false
			}
		} else if !s.binEligible(tg, t) {
			return false
		}
	}
	if tg.honorTaints {
		if ok, _ := tolerates(tg.tolerations, t.taints, false); !ok {
			return false
		}
	}
	return true
}

// binEligible decides whether a planned node passes a spread's node filter.
// That depends on the instance type it launches as (its architecture, say),
// so when the bin's types disagree, the bin keeps only those that agree with
// its cheapest: the answer must be definite, as kube-scheduler's will be.
func (s *state) binEligible(tg *topoGroup, t *target) bool {
	if v, ok := t.eligible[tg]; ok {
		return v
	}
	if len(t.types) == 0 {
		return filterCompatible(tg.nodeFilter, t.reqs)
	}
	agree := func(it *itype) bool { return filterCompatible(tg.nodeFilter, t.reqs.Intersect(it.it.Requirements)) }
	want := agree(t.types[0])
	types, prices := t.types[:0:0], t.prices[:0:0]
	for i, it := range t.types {
		if agree(it) == want {
			types, prices = append(types, it), append(prices, t.prices[i])
		}
	}
	if len(types) != len(t.types) {
		t.types, t.prices = types, prices
		t.setAvail()
		t.refreshAim()
	}
	if t.eligible == nil {
		t.eligible = map[*topoGroup]bool{}
	}
	t.eligible[tg] = want
	return want
}

// addDomains lists the domains a spread group ranges over: the values on
// eligible existing nodes and those new nodes of any pool could take.
func (s *state) addDomains(tg *topoGroup) {
	if tg.kind != spread || tg.key == corev1.LabelHostname {
		return
	}
	tg.min = -1
	for _, t := range s.nodes {
		if v, ok := t.labels[tg.key]; ok && s.countsOn(tg, t) {
			tg.domains[v] = true
		}
	}
	for _, p := range s.pools {
		if tg.honorTaints {
			if ok, _ := tolerates(tg.tolerations, p.taints, false); !ok {
				continue
			}
		}
		terms := tg.nodeFilter
		if len(terms) == 0 {
			terms = []scheduling.Requirements{{}}
		}
		for _, term := range terms {
			if p.reqs.Compatible(term) != nil {
				continue
			}
			for _, v := range s.poolValues(p, p.reqs.Intersect(term), tg.key) {
				tg.domains[v] = true
			}
		}
	}
}

// poolValues are the values of key a new node of the pool could have.
func (s *state) poolValues(p *pool, reqs scheduling.Requirements, key string) []string {
	if r, ok := reqs[key]; ok && !r.Complement() {
		return r.Values()
	}
	seen := map[string]bool{}
	for _, t := range p.types {
		if key == corev1.LabelTopologyZone || key == instancetype.CapacityTypeLabel {
			for _, o := range t.it.Offerings {
				v := o.Zone
				if key != corev1.LabelTopologyZone {
					v = o.CapacityType
				}
				if o.Available && o.Allowed(reqs) {
					if r, ok := reqs[key]; !ok || r.Has(v) {
						seen[v] = true
					}
				}
			}
			continue
		}
		if r, ok := t.it.Requirements[key]; ok && !r.Complement() {
			for _, v := range r.Values() {
				if rr, ok := reqs[key]; !ok || rr.Has(v) {
					seen[v] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

package solver

import (
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// Solve places the input's pending pods. It returns an error only for input it
// cannot read at all; a pod it cannot place is reported in the Plan.
func Solve(in *Input) (*Plan, error) {
	s, err := compile(in)
	if err != nil {
		return nil, err
	}
	s.run()
	s.finish()
	return s.plan, nil
}

// choice is where a pod would go on a target: the domain chosen for each
// topology key the pod cares about (a bin's open zone is narrowed to it).
type choice struct {
	n      int
	keys   [8]string
	vals   [8]string
	narrow [8]bool
	// marginal is what the bin's price would rise by.
	marginal float64
	// podReqs: the pod's own requirements narrow the bin.
	podReqs bool
	// typ is the bin's type that marginal prices.
	typ *itype
}

func (c *choice) value(key string) (string, bool) {
	for i := 0; i < c.n; i++ {
		if c.keys[i] == key {
			return c.vals[i], true
		}
	}
	return "", false
}

func (s *state) run() {
	queue := s.groups
	var failed []*group
	for len(queue) > 0 {
		var retry []*group
		for _, g := range queue {
			s.placeAll(g)
			if len(g.pods) == 0 {
				continue
			}
			// The rest of the group fails the same way: relax or give up.
			// BestEffort gives up minValues before any preference.
			if ng := s.relaxMinValuesOf(g); ng != nil {
				retry = append(retry, ng)
				continue
			}
			if ng := s.relaxGroup(g); ng != nil {
				retry = append(retry, ng)
				continue
			}
			failed = append(failed, g)
		}
		queue = retry
	}
	// A group given up on may fit once the groups after it are placed: a pod
	// with required affinity to pods that come later, say. Like Karpenter's
	// scheduler with its queue, retry the failed groups while a round places
	// any pod; a round that places none changes nothing, so this ends.
	for progress := len(failed) > 0; progress; {
		progress = false
		for _, g := range failed {
			before := len(g.pods)
			s.placeAll(g)
			progress = progress || len(g.pods) < before
		}
	}
	for _, g := range failed {
		for _, p := range g.pods {
			s.plan.Unschedulable = append(s.plan.Unschedulable, Unschedulable{Pod: p, Reason: s.explain(g)})
		}
	}
}

// placeAll places the group's pods in order until one does not fit, and
// leaves the rest in g.pods.
func (s *state) placeAll(g *group) {
	for len(g.pods) > 0 && s.place(g, g.pods[0]) {
		g.pods = g.pods[1:]
	}
}

// relaxMinValuesOf returns, under BestEffort, the group's remaining pods
// free of minValues, or nil when that is off, done, or moot (no NodePool
// has minValues).
func (s *state) relaxMinValuesOf(g *group) *group {
	if !s.bestEffort || g.minValuesRelaxed {
		return nil
	}
	moot := true
	for _, p := range s.pools {
		moot = moot && len(p.minValues) == 0
	}
	if moot {
		return nil
	}
	p := g.pods[0]
	ng := &group{id: len(s.groups), pods: g.pods, namespace: g.namespace, labels: g.labels, blocked: g.blocked, minValuesRelaxed: true}
	vreqs, _, _ := s.volumes.requirements(p)
	if err := s.initGroup(ng, p, vreqs, g.relaxed); err != nil {
		return nil
	}
	s.groups = append(s.groups, ng)
	s.linkGroup(ng)
	return ng
}

// relaxGroup returns the group's remaining pods one relaxation step further,
// or nil when no preference is left to drop.
func (s *state) relaxGroup(g *group) *group {
	p := g.pods[0]
	if !canRelax(p, g.relaxed, s.preferNoS) {
		return nil
	}
	ng := &group{id: len(s.groups), pods: g.pods, namespace: g.namespace, labels: g.labels, blocked: g.blocked, minValuesRelaxed: g.minValuesRelaxed}
	vreqs, _, _ := s.volumes.requirements(p)
	before := len(s.topo.groups)
	if err := s.initGroup(ng, p, vreqs, g.relaxed+1); err != nil {
		return nil
	}
	s.groups = append(s.groups, ng)
	if len(s.topo.groups) > before {
		// New topology groups count what is already placed.
		for _, tg := range s.topo.groups[before:] {
			s.topoKeys[tg.key] = true
			s.addDomains(tg)
			s.recount(tg)
		}
		for _, og := range s.groups {
			s.linkGroup(og)
		}
	} else {
		s.linkGroup(ng)
	}
	return ng
}

// recount counts a topology group created mid-solve over all targets.
func (s *state) recount(tg *topoGroup) {
	for _, ts := range [][]*target{s.nodes, s.bins} {
		for _, t := range ts {
			vals, _ := t.domainValues(tg.key)
			if len(vals) != 1 || !s.countsOn(tg, t) {
				continue
			}
			for _, p := range t.pods {
				if tg.matchesPod(p.Namespace, p.Labels, s.topo.nsLabels) {
					tg.record(vals[0])
				}
			}
		}
	}
}

// place puts one pod of g somewhere, or reports false.
func (s *state) place(g *group, p *corev1.Pod) bool {
	if g.blocked != "" || len(g.tooManyResources) > 0 {
		return false
	}
	var ch choice
	for i := g.nodeCursor; i < len(s.nodes); i++ {
		t := s.nodes[i]
		ch.n = 0
		if r := s.fitNode(g, t, &ch); r != nil {
			if r.monotone && i == g.nodeCursor {
				g.nodeCursor++
			}
			continue
		}
		s.commit(g, p, t, &ch)
		return true
	}
	// A planned NodeClaim with room at its current price costs nothing more.
	// Bins in [binCursor, zeroCursor) had no such room for this group when it
	// last looked; only bins it grew since (dirty) or changes in its topology
	// counts can have changed that, as a group's pods are placed one after
	// another.
	if g.zeroCursor < g.binCursor {
		g.zeroCursor = g.binCursor
	}
	if e := s.topoEpoch(g); e != g.epoch {
		// Only bins refused for topology can have changed their answer.
		g.epoch = e
		g.dirty = append(g.dirty, g.topoRefused...)
		g.topoRefused = g.topoRefused[:0]
	}
	for _, i := range g.dirty {
		if s.tryZero(g, p, i, &ch) {
			return true
		}
	}
	g.dirty = g.dirty[:0]
	cpu, mem := g.req[0], g.req[1]
	for i := g.zeroCursor; i < len(s.bins); i++ {
		// Most bins are full: the dense slack array rules them out without
		// touching the bins themselves.
		if sl := &s.slack[i]; sl[0] < cpu || sl[1] < mem {
			continue
		}
		if s.tryZero(g, p, i, &ch) {
			g.zeroCursor = i
			return true
		}
	}
	g.zeroCursor = len(s.bins)
	// Otherwise grow the planned NodeClaim whose price rises least per pod
	// of the group it makes room for, among the first few that can hold the
	// pod, unless a new NodeClaim costs less per pod (see aim.go). At the
	// same price, growing a NodeClaim that holds only this group's pods
	// makes fewer nodes, while a new one keeps groups apart: growing would
	// put this group's pods beside others' (a 3-hour job beside 20-minute
	// ones, say), and one lingering group would then hold the larger node.
	grow := option{bin: -1, perPod: math.Inf(1)}
	tried := 0
	for i := g.binCursor; i < len(s.bins) && tried < growCandidates; i++ {
		t := s.bins[i]
		if !fitsSum(&t.used, &g.req, &t.avail) {
			if i == g.binCursor {
				g.binCursor++
			}
			continue
		}
		ch.n = 0
		if r := s.fitBin(g, t, &ch); r != nil {
			if r.monotone && i == g.binCursor {
				g.binCursor++
			}
			continue
		}
		tried++
		if per := ch.marginal / float64(s.roomFor(g, t, &ch.typ.alloc)); per < grow.perPod {
			grow = option{bin: i, ch: ch, perPod: per}
		}
	}
	if nb := s.newBin(g); nb != nil {
		if aim, per, short := s.chooseAim(g, nb.t, &nb.ch); aim >= 0 && (grow.bin < 0 || s.newBeatsGrowth(g, per, &grow)) {
			nb.t.aim, nb.t.aimShort = nb.t.types[aim], short
			s.bins = append(s.bins, nb.t)
			s.slack = append(s.slack, [2]int64{})
			s.commit(g, p, nb.t, &nb.ch)
			return true
		}
	}
	if grow.bin >= 0 {
		g.dirty = append(g.dirty, grow.bin)
		s.commit(g, p, s.bins[grow.bin], &grow.ch)
		return true
	}
	return false
}

// tryZero places p on bin i if that costs nothing more.
func (s *state) tryZero(g *group, p *corev1.Pod, i int, ch *choice) bool {
	t := s.bins[i]
	if !fitsSum(&t.used, &g.req, &t.avail) {
		if i == g.binCursor {
			g.binCursor++ // even its largest type is too small: for good
		}
		return false
	}
	if !t.zeroRoom(g) {
		return false
	}
	ch.n = 0
	if r := s.fitBin(g, t, ch); r != nil {
		if r.monotone && i == g.binCursor {
			g.binCursor++
		}
		if r == refTopo {
			g.topoRefused = append(g.topoRefused, i)
		}
		return false
	}
	if ch.marginal > 0 {
		return false
	}
	s.commit(g, p, t, ch)
	return true
}

// topoEpoch changes whenever a topology group the group owns may have
// started to allow a domain it refused: a spread's minimum rose, or an
// affinity's first matching pod arrived somewhere.
func (s *state) topoEpoch(g *group) int {
	e := 0
	for _, tg := range g.owned {
		e += tg.epoch
	}
	return e
}

// growCandidates bounds how many planned NodeClaims a pod's growth is priced
// on: enough to find a cheap step, few enough to keep a solve linear.
const growCandidates = 16

// fitNode checks an existing or in-flight node.
func (s *state) fitNode(g *group, t *target, ch *choice) *refusal {
	if t.deleting {
		return refDeleting
	}
	if !fitsSum(&t.used, &g.req, &t.avail) {
		return &refusal{"not enough allocatable left", true}
	}
	if ok, taint := tolerates(g.tolerations, t.taints, true); !ok {
		return &refusal{"taint " + taintString(taint) + " not tolerated", true}
	}
	if len(g.reqs) > 0 {
		if err := g.reqs.Matches(t.labels); err != nil {
			return &refusal{err.Error(), true}
		}
	}
	if len(g.ports) > 0 && portsConflict(t.ports, g.ports) {
		return refPorts
	}
	return s.chooseDomains(g, t, nil, ch)
}

// fitBin checks a planned NodeClaim and prices the fit.
func (s *state) fitBin(g *group, t *target, ch *choice) *refusal {
	if !fitsSum(&t.used, &g.req, &t.avail) {
		return &refusal{"no instance type left can hold it", true}
	}
	if !s.poolAllows(g, t.pool) {
		return &refusal{"NodePool refuses the pod", true}
	}
	if len(g.reqs) > 0 {
		if err := t.reqs.Compatible(g.reqs); err != nil {
			return &refusal{err.Error(), true}
		}
	}
	if len(g.ports) > 0 && portsConflict(t.ports, g.ports) {
		return refPorts
	}
	if r := s.chooseDomains(g, t, t.reqs, ch); r != nil {
		return r
	}
	need := t.used
	need.add(&g.req)
	ch.podReqs = len(g.reqs) > 0 && !subsumes(t.reqs, g.reqs)
	pr := s.pricerFor(g, t, ch)
	i, price := s.cheapestFit(g, t, &need, ch, &pr)
	if i < 0 {
		return &refusal{"no instance type left can hold it", false}
	}
	if !s.minValuesOK(g, t, &need, ch) {
		return refMinValues
	}
	ch.typ = t.types[i]
	cur := t.price()
	if t.aim != nil {
		ap, held, kept := s.aimUnder(g, t, &need, ch, &pr)
		switch {
		case !kept:
			// The pod rules the aim out: the bin is worth its real price.
			cur = t.prices[0]
		case held && ap >= price:
			price, ch.typ = ap, t.aim
		}
	}
	ch.marginal = price - cur
	return nil
}

// poolAllows caches whether the pool's taints and requirements admit the group.
func (s *state) poolAllows(g *group, p *pool) bool {
	return s.typeOK(g, p) != nil
}

// typeOK lists, per type of the pool, whether the group's requirements allow
// it; nil when the pool refuses the group outright.
func (s *state) typeOK(g *group, p *pool) []bool {
	if ok := g.typeOK[p.idx]; ok != nil {
		if len(ok) == 0 {
			return nil
		}
		return ok
	}
	g.typeOK[p.idx] = []bool{}
	if ok, _ := tolerates(g.tolerations, p.taints, true); !ok {
		return nil
	}
	if p.reqs.Compatible(g.reqs) != nil || undefinedLabel(p, g) != "" {
		return nil
	}
	reqs := p.reqs
	if len(g.reqs) > 0 {
		reqs = p.reqs.Intersect(g.reqs)
	}
	ok := make([]bool, len(p.types))
	any := false
	for i, t := range p.types {
		if len(g.reqs) == 0 {
			ok[i] = true
		} else if t.it.Requirements.Compatible(reqs) == nil {
			_, ok[i] = t.it.Offerings.Cheapest(reqs)
		}
		any = any || ok[i]
	}
	if !any {
		return nil
	}
	g.typeOK[p.idx] = ok
	return ok
}

// undefinedLabel returns a label key the group requires that no node of the
// pool would have: the pool neither sets it nor do its instance types define
// it. Requirements a missing label satisfies (NotIn, DoesNotExist) are fine.
func undefinedLabel(p *pool, g *group) string {
	for key, r := range g.reqs {
		if p.provided[key] {
			continue
		}
		if (scheduling.Requirements{key: r}).Matches(nil) != nil {
			return key
		}
	}
	return ""
}

// cheapestFit finds the cheapest type of the bin that holds need under the
// choice's narrowing; it returns its index in t.types and its price.
func (s *state) cheapestFit(g *group, t *target, need *vec, ch *choice, pr *pricer) (int, float64) {
	ok := s.typeOK(g, t.pool)
	for i, it := range t.types {
		if !ok[it.idx] {
			continue
		}
		if f, _ := fits(need, &it.alloc); !f {
			continue
		}
		if !s.withinLimits(t, it) {
			continue
		}
		if price, found := s.priceOf(t, i, ch, pr); found {
			return i, price
		}
	}
	return -1, 0
}

// pricer holds what pricing a bin's types under a choice needs, worked out
// once per choice.
type pricer struct {
	merged      scheduling.Requirements
	zone        string
	narrowZone  bool
	narrowOther bool
}

func (s *state) pricerFor(g *group, t *target, ch *choice) pricer {
	var pr pricer
	pr.zone, pr.narrowZone = ch.narrowed(corev1.LabelTopologyZone)
	pr.narrowOther = ch.narrowsOther()
	if ch.podReqs {
		// The pod narrows the bin itself: price under what commit will apply.
		pr.merged = s.narrowedReqs(t.reqs.Intersect(g.reqs), ch)
	}
	return pr
}

// priceOf prices the bin's type i under the choice; false when the narrowed
// bin could not launch it.
func (s *state) priceOf(t *target, i int, ch *choice, pr *pricer) (float64, bool) {
	it := t.types[i]
	switch {
	case pr.merged != nil:
		if it.it.Requirements.Compatible(pr.merged) != nil {
			return 0, false
		}
		o, found := it.it.Offerings.Cheapest(pr.merged)
		return o.Price, found
	case pr.narrowZone || pr.narrowOther:
		return s.narrowedPrice(t, it, ch, pr.zone, pr.narrowZone)
	}
	return t.prices[i], true
}

func (c *choice) narrowed(key string) (string, bool) {
	for i := 0; i < c.n; i++ {
		if c.keys[i] == key && c.narrow[i] {
			return c.vals[i], true
		}
	}
	return "", false
}

func (c *choice) narrowsOther() bool {
	for i := 0; i < c.n; i++ {
		if c.narrow[i] && c.keys[i] != corev1.LabelTopologyZone {
			return true
		}
	}
	return false
}

// narrowedPrice prices a type once the choice narrows the bin's open keys.
func (s *state) narrowedPrice(t *target, it *itype, ch *choice, zone string, narrowZone bool) (float64, bool) {
	if narrowZone && !ch.narrowsOther() && !t.offersNarrowed {
		p, ok := it.zonePrice[zone]
		return p, ok
	}
	reqs := s.narrowedReqs(t.reqs, ch)
	if it.it.Requirements.Compatible(reqs) != nil {
		return 0, false
	}
	o, ok := it.it.Offerings.Cheapest(reqs)
	return o.Price, ok
}

func (s *state) narrowedReqs(reqs scheduling.Requirements, ch *choice) scheduling.Requirements {
	out := reqs.Copy()
	for i := 0; i < ch.n; i++ {
		if ch.narrow[i] {
			out[ch.keys[i]] = scheduling.NewRequirement(ch.keys[i], corev1.NodeSelectorOpIn, ch.vals[i])
		}
	}
	return out
}

// withinLimits reports whether switching the bin to this type keeps the pool
// within its limits.
func (s *state) withinLimits(t *target, it *itype) bool {
	p := t.pool
	for i := range p.limited {
		if p.limited[i] && it.capacity[i]-t.reserved[i] > p.remaining[i] {
			return false
		}
	}
	return true
}

// chooseDomains picks, for each topology key the group cares about, the
// target's domain: the only one, or for a bin whose key is still open, the
// best allowed value (fewest matching pods, to spread; then first by name).
func (s *state) chooseDomains(g *group, t *target, binReqs scheduling.Requirements, ch *choice) *refusal {
	for _, list := range [3][]*topoGroup{g.owned, g.antiMatch, g.counted} {
		for _, tg := range list {
			if _, done := ch.value(tg.key); done {
				continue
			}
			if r := s.chooseKey(g, t, tg.key, ch); r != nil {
				return r
			}
		}
	}
	return nil
}

func (s *state) chooseKey(g *group, t *target, key string, ch *choice) *refusal {
	vals, open := t.domainValues(key)
	owns := false
	for _, tg := range g.owned {
		if tg.key == key {
			owns = true
		}
	}
	if len(vals) == 0 {
		if owns {
			if s.explaining {
				return &refusal{"node would not have label " + key, true}
			}
			return refTopoFinal
		}
		return nil
	}
	if r, ok := g.reqs[key]; ok && open {
		kept := vals[:0:0]
		for _, v := range vals {
			if r.Has(v) {
				kept = append(kept, v)
			}
		}
		vals = kept
	}
	best, bestScore := "", math.MaxInt
	var why *refusal
	for _, v := range vals {
		score, r := s.domainScore(g, key, v)
		if r != nil {
			why = r
			continue
		}
		if score < bestScore {
			best, bestScore = v, score
		}
	}
	if bestScore == math.MaxInt {
		if why == nil {
			why = refTopoFinal
			if s.explaining {
				why = &refusal{"no value of " + key + " allowed", true}
			}
		}
		if open && why.monotone {
			why = &refusal{why.reason, false}
		}
		return why
	}
	if ch.n == len(ch.keys) {
		return &refusal{"too many topology keys", false}
	}
	ch.keys[ch.n], ch.vals[ch.n], ch.narrow[ch.n] = key, best, open
	ch.n++
	return nil
}

// domainScore checks a domain against the group's constraints on key and
// scores it: lower is better.
func (s *state) domainScore(g *group, key, v string) (int, *refusal) {
	score := 0
	for _, tg := range g.owned {
		if tg.key != key {
			continue
		}
		if !tg.allows(v) {
			if s.explaining {
				return 0, &refusal{tg.why(v), tg.monotone()}
			}
			if tg.monotone() {
				return 0, refTopoFinal
			}
			return 0, refTopo
		}
		if tg.kind == spread {
			score += tg.counts[v] * 1024
		}
	}
	for _, tg := range g.antiMatch {
		if tg.key == key && tg.owners[v] > 0 {
			if s.explaining {
				return 0, &refusal{"a pod in " + key + "=" + v + " has " + tg.desc + " matching this pod", true}
			}
			return 0, refTopoFinal
		}
	}
	for _, tg := range g.counted {
		if tg.key == key && tg.kind == spread {
			score += tg.counts[v]
		}
	}
	return score, nil
}

// newBinOption is a NodeClaim the pod could start, not yet added.
type newBinOption struct {
	t  *target
	ch choice
}

// newBin plans a new NodeClaim for one pod of g in the first NodePool (by
// weight, then name) that can launch one.
func (s *state) newBin(g *group) *newBinOption {
	for _, p := range s.pools {
		if s.typeOK(g, p) == nil || (p.nodesLimited && p.remainingNodes <= 0) {
			continue
		}
		tmpl := s.binTemplate(g, p)
		if tmpl == nil {
			continue
		}
		// Names are never reused, so a rejected candidate leaves no trace.
		s.binSeq++
		t := &target{name: fmt.Sprintf("nodewright-planned-%d", s.binSeq-1), pool: p, reqs: tmpl.reqs.Copy(), taints: p.taints, claim: len(s.bins), daemon: tmpl.daemon, used: tmpl.daemon, daemonPods: tmpl.daemonPods}
		for i, it := range tmpl.types {
			if s.fitsPoolLimits(p, it) {
				t.types = append(t.types, it)
				t.prices = append(t.prices, tmpl.prices[i])
			}
		}
		if len(t.types) == 0 {
			continue
		}
		t.avail = tmpl.avail
		if opt := s.newBinIn(g, t); opt != nil {
			return opt
		}
	}
	return nil
}

// newBinIn checks a candidate bin for the pod. The node's DaemonSet pods are
// there before the pod, so they count while checking (and for real once the
// bin is committed); for that, any key of a topology group that selects them
// is first pinned to one value, trying each in turn.
func (s *state) newBinIn(g *group, t *target) *newBinOption {
	key := s.daemonKeyToPin(t)
	if key == "" {
		return s.newBinTry(g, t)
	}
	vals, _ := t.domainValues(key)
	base := t.reqs
	for _, v := range vals {
		t.reqs = base.Copy()
		t.reqs[key] = scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, v)
		t.domains = nil
		if opt := s.newBinIn(g, t); opt != nil {
			s.filterTypes(g, t)
			if len(t.types) > 0 {
				return opt
			}
		}
	}
	t.reqs, t.domains = base, nil
	return nil
}

func (s *state) newBinTry(g *group, t *target) *newBinOption {
	if s.daemonsRepelled(t) {
		return nil
	}
	var ch choice
	s.recordDaemons(t, 1)
	r := s.chooseDomains(g, t, t.reqs, &ch)
	s.recordDaemons(t, -1)
	if r != nil {
		return nil
	}
	need := t.used
	need.add(&g.req)
	ch.podReqs = len(g.reqs) > 0 && !subsumes(t.reqs, g.reqs)
	pr := s.pricerFor(g, t, &ch)
	if i, _ := s.cheapestFit(g, t, &need, &ch, &pr); i < 0 || !s.minValuesOK(g, t, &need, &ch) {
		return nil
	}
	return &newBinOption{t: t, ch: ch}
}

// daemonsRepelled reports whether a pod already placed has required
// anti-affinity against one of the bin's DaemonSet pods in the bin's domain:
// kube-scheduler would leave that DaemonSet pod pending, so the solver does
// not plan such a node.
func (s *state) daemonsRepelled(t *target) bool {
	for _, d := range t.daemonPods {
		for _, tg := range s.topo.groups {
			if tg.kind != antiAffinity || !tg.required || len(tg.owners) == 0 || !tg.matchesPod(d.pod.Namespace, d.pod.Labels, s.topo.nsLabels) {
				continue
			}
			if vals, _ := t.domainValues(tg.key); len(vals) == 1 && tg.owners[vals[0]] > 0 {
				return true
			}
		}
	}
	return false
}

// daemonKeyToPin returns a topology key, open in the bin, of a group that
// selects one of the bin's DaemonSet pods; "" when there is none.
func (s *state) daemonKeyToPin(t *target) string {
	for _, d := range t.daemonPods {
		for _, tg := range s.topo.groups {
			if tg.key == corev1.LabelHostname || !tg.matchesPod(d.pod.Namespace, d.pod.Labels, s.topo.nsLabels) {
				continue
			}
			if _, open := t.domainValues(tg.key); open {
				return tg.key
			}
		}
	}
	return ""
}

// binTemplate is what a new NodeClaim of the pool for the group starts as:
// requirements (with open topology keys listed), DaemonSet overhead, and the
// types that hold the pod with that overhead, cheapest first. It depends only
// on the group and the pool, so it is computed once.
type binTemplate struct {
	reqs       scheduling.Requirements
	daemon     vec
	daemonPods []*daemon
	types      []*itype
	prices     []float64
	avail      vec
}

func (s *state) binTemplate(g *group, p *pool) *binTemplate {
	if g.templates == nil {
		g.templates = make([]*binTemplate, len(s.pools))
	}
	if tm := g.templates[p.idx]; tm != nil {
		if len(tm.types) == 0 {
			return nil
		}
		return tm
	}
	tm := &binTemplate{}
	g.templates[p.idx] = tm
	ok := s.typeOK(g, p)
	reqs := p.reqs.Copy()
	if len(g.reqs) > 0 {
		reqs = p.reqs.Intersect(g.reqs)
	}
	keys := make([]string, 0, len(s.topoKeys))
	for key := range s.topoKeys {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if key == corev1.LabelHostname || reqs.Has(key) {
			continue
		}
		if vals := s.poolValues(p, reqs, key); len(vals) > 0 {
			reqs[key] = scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, vals...)
		}
	}
	tm.reqs = reqs
	// Which DaemonSets run depends on the instance type the node launches as
	// (a DaemonSet for amd64 only, say): each type is judged with its own.
	candidates := s.daemonsFor(p, reqs)
	typeDependent := false
	for _, d := range candidates {
		for _, r := range d.reqs {
			typeDependent = typeDependent || len(r) > 0
		}
	}
	t := &target{}
	var sets [][]*daemon
	for _, it := range p.types {
		if !ok[it.idx] {
			continue
		}
		o, found := it.it.Offerings.Cheapest(reqs)
		if !found {
			continue
		}
		ds := candidates
		if typeDependent {
			ds = daemonsOn(candidates, reqs.Intersect(it.it.Requirements))
		}
		need := g.req
		for _, d := range ds {
			need.add(&d.req)
		}
		if f, _ := fits(&need, &it.alloc); !f {
			continue
		}
		t.types = append(t.types, it)
		t.prices = append(t.prices, o.Price)
		sets = append(sets, ds)
	}
	if len(t.types) == 0 {
		return nil
	}
	// Keep the types that run the same DaemonSets as the cheapest, so the
	// bin's overhead and its pods' topology are one thing.
	cheapest := 0
	for i := range t.types {
		if t.prices[i] < t.prices[cheapest] || (t.prices[i] == t.prices[cheapest] && t.types[i].idx < t.types[cheapest].idx) {
			cheapest = i
		}
	}
	types, prices := t.types[:0:0], t.prices[:0:0]
	for i := range t.types {
		if sameDaemons(sets[i], sets[cheapest]) {
			types, prices = append(types, t.types[i]), append(prices, t.prices[i])
		}
	}
	t.types, t.prices = types, prices
	tm.daemonPods = sets[cheapest]
	for _, d := range tm.daemonPods {
		tm.daemon.add(&d.req)
	}
	sortByPrice(t)
	t.setAvail()
	tm.types, tm.prices, tm.avail = t.types, t.prices, t.avail
	return tm
}

func (s *state) fitsPoolLimits(p *pool, it *itype) bool {
	for i := range p.limited {
		if p.limited[i] && it.capacity[i] > p.remaining[i] {
			return false
		}
	}
	return true
}

func sortByPrice(t *target) {
	idx := make([]int, len(t.types))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if t.prices[idx[a]] != t.prices[idx[b]] {
			return t.prices[idx[a]] < t.prices[idx[b]]
		}
		return t.types[idx[a]].idx < t.types[idx[b]].idx
	})
	types := make([]*itype, len(idx))
	prices := make([]float64, len(idx))
	for i, j := range idx {
		types[i], prices[i] = t.types[j], t.prices[j]
	}
	t.types, t.prices = types, prices
}

func (t *target) setAvail() {
	var m vec
	for _, it := range t.types {
		for i := range m {
			if it.alloc[i] > m[i] {
				m[i] = it.alloc[i]
			}
		}
	}
	t.avail = m
}

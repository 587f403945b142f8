package explain

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/disruption/budget"
	"github.com/nodewright/nodewright/internal/instancetype"
)

// maxOptions bounds the instance types listed for a NodeClaim to launch;
// the rest are counted.
const maxOptions = 5

// WriteText writes the explanation for people.
func (e *PodExplanation) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.line(0, "Pod %s: %s", e.Pod, e.Status)
	p.line(1, "requests: %s", resources(e.Requests))
	decision := "Decision"
	if e.Hypothetical {
		decision = "Decision if it were pending now"
	}
	switch d := e.Decision; d.Kind {
	case DecisionExisting:
		p.line(0, "%s: goes to existing node %s", decision, d.Node)
	case DecisionLaunch:
		p.line(0, "%s: launch a NodeClaim of NodePool %s at %s (%d pod(s) on it), one of:", decision, d.NodePool, price(d.Price), d.Pods)
		for i, o := range d.InstanceTypes {
			if i == maxOptions {
				p.line(1, "... and %d more", len(d.InstanceTypes)-maxOptions)
				break
			}
			p.line(1, "%s %s", o.Name, price(o.Price))
		}
	case DecisionUnschedulable:
		p.line(0, "%s: %s", decision, d.Reason)
	case DecisionNominated:
		p.line(0, "%s: wait for NodeClaim %s, launched for it; nothing more to plan", decision, d.NodeClaim)
	default:
		p.line(0, "%s: none; nodewright does not provision for this pod. Below: where it would fit.", decision)
	}
	for _, n := range e.Notes {
		p.line(0, "Note: %s", n)
	}
	if len(e.Existing) > 0 {
		p.line(0, "Existing nodes that refuse it:")
		for _, c := range e.Existing {
			p.line(1, "%d node(s): %s (e.g. %s)", c.Nodes, c.Reason, c.Example)
		}
	}
	for _, pf := range e.NodePools {
		switch {
		case pf.NotReady != "":
			p.line(0, "NodePool %s: launches nothing: %s", pf.NodePool, pf.NotReady)
		case pf.Reason != "":
			p.line(0, "NodePool %s: %s", pf.NodePool, pf.Reason)
		default:
			p.line(0, "NodePool %s:", pf.NodePool)
			writeTypes(p, pf.Types)
		}
	}
	return p.err
}

// writeTypes writes one line with the arithmetic per type that does not
// fit and per cheapest type that fits (the solver orders them by price),
// and one line per other reason, naming the types it covers: a NodePool
// open to a whole catalog would otherwise print dozens of alike lines.
func writeTypes(p *printer, types []TypeFit) {
	grouped := map[string][]string{}
	var order []string
	fitting, extra := 0, []string(nil)
	for _, t := range types {
		if t.Fits && t.Arithmetic != nil {
			if fitting++; fitting > maxOptions {
				extra = append(extra, t.InstanceType)
				continue
			}
		}
		if t.Arithmetic != nil {
			verdict := "does not fit"
			if t.Fits {
				verdict = "fits"
			}
			p.line(1, "%s %s: %s: %s", t.InstanceType, price(t.Price), verdict, arithmetic(t))
			continue
		}
		reason := t.Reason
		if t.Fits {
			// The solver's words for a type that fits assume the pod failed.
			reason = "fits: the pod requests nothing these types are short of"
		}
		if _, ok := grouped[reason]; !ok {
			order = append(order, reason)
		}
		grouped[reason] = append(grouped[reason], t.InstanceType)
	}
	if len(extra) > 0 {
		p.line(1, "%s: fit as well", typeList(extra))
	}
	for _, r := range order {
		names := grouped[r]
		p.line(1, "%s: %s", typeList(names), r)
	}
}

// arithmetic writes "memory: pod 245760Mi + DaemonSets 1024Mi = 246784Mi >
// allocatable: 262144Mi - 19661Mi (7.5%) - ... = 239554Mi", the figures
// people check by hand.
func arithmetic(t TypeFit) string {
	a := t.Arithmetic
	need := instancetype.Format(a.Resource, t.Needed)
	if !t.DaemonSets.IsZero() {
		need = fmt.Sprintf("pod %s + DaemonSets %s = %s", instancetype.Format(a.Resource, t.Pod), instancetype.Format(a.Resource, t.DaemonSets), need)
	} else {
		need = "pod " + need
	}
	cmp := ">"
	if t.Fits {
		cmp = "<="
	}
	return fmt.Sprintf("%s: %s %s allocatable: %s", a.Resource, need, cmp, a.String())
}

func typeList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	const show = 4
	if len(names) <= show {
		return fmt.Sprintf("%d types (%s)", len(names), strings.Join(names, ", "))
	}
	return fmt.Sprintf("%d types (%s, ...)", len(names), strings.Join(names[:show], ", "))
}

// WriteText writes the explanation for people, times relative to now.
func (e *NodeExplanation) WriteText(w io.Writer, now time.Time) error {
	p := &printer{w: w}
	head := "Node " + e.Node
	if e.Node == "" {
		head = "NodeClaim " + e.Claim + " (no node yet)"
	} else if e.Claim != "" {
		head += " (NodeClaim " + e.Claim + ")"
	}
	p.line(0, "%s", head)
	switch {
	case e.NodePool != "" && e.InstanceType == "" && e.Node == "":
		// Not launched yet: no instance type, zone or price to show.
		p.line(1, "NodePool %s; not launched yet (instance type, zone and price come with the launch); %d pod(s) to move", e.NodePool, e.Pods)
	case e.NodePool != "":
		p.line(1, "NodePool %s; %s %s %s at %s; %d pod(s) to move", e.NodePool, dash(e.InstanceType), dash(e.Zone), dash(e.CapacityType), price(e.Price), e.Pods)
	}
	switch {
	case e.State == "NotCandidate":
		p.line(0, "Decision: not considered for disruption: %s", e.NotCandidate)
	case e.Command != nil:
		p.line(0, "Decision: disrupting (%s, %s): %s", e.Command.Reason, e.Command.Method, e.Command.Message)
		if len(e.Command.Nodes) > 1 {
			p.line(1, "together with %s", strings.Join(others(e.Command.Nodes, e.Node), ", "))
		}
		for _, r := range e.Command.Replacements {
			p.line(1, "replacement: NodePool %s at %s", r.NodePool, price(r.Price()))
		}
		if e.Command.Consolidation {
			p.line(1, "the controller acts once its loops have decided the same for --consolidation-validation-delay (15s by default); meanwhile the NodeClaim's preview says Validating")
		}
	case e.State == "Attrition":
		p.line(0, "Decision: draining by attrition")
	case len(e.Blockers) > 0:
		p.line(0, "Decision: kept, because:")
	default:
		p.line(0, "Decision: kept: nothing calls for disrupting it now (not expired, drifted or empty, and consolidation found nothing cheaper)")
	}
	for _, b := range e.Blockers {
		p.line(1, "- %s", b)
	}

	p.line(0, "Protection:")
	if len(e.Protection) == 0 {
		p.line(1, "nothing protects it: no do-not-disrupt pod or annotation, no PDB that refuses an eviction")
	}
	for _, r := range e.Protection {
		p.line(1, "%s: %s%s", r.Kind, r.Message, until(r.Until, now))
	}
	for _, r := range e.Warnings {
		p.line(1, "warning: %s", r.Message)
	}

	c := e.Consolidation
	switch {
	case e.NodePool == "":
	case c.After == nil:
		p.line(0, "Consolidation: %s, consolidateAfter Never: consolidation never takes this node", c.Policy)
	case c.EligibleAt.IsZero():
		p.line(0, "Consolidation: %s, consolidateAfter %s", c.Policy, short(*c.After))
	case c.EligibleAt.After(now):
		p.line(0, "Consolidation: %s, consolidateAfter %s: idle since %s, eligible at %s (in %s)", c.Policy, short(*c.After), stamp(c.IdleSince), stamp(c.EligibleAt), short(c.EligibleAt.Sub(now)))
	default:
		p.line(0, "Consolidation: %s, consolidateAfter %s: idle since %s, eligible since %s", c.Policy, short(*c.After), stamp(c.IdleSince), stamp(c.EligibleAt))
	}

	if e.Claim != "" {
		drifted := "none"
		if e.Drift != "" {
			drifted = e.Drift
		}
		p.line(0, "Drift: %s", drifted)
		switch x := e.Expiry; {
		case x.After == nil:
			p.line(0, "Expiry: expireAfter Never")
		case x.Expired:
			p.line(0, "Expiry: expireAfter %s: expired at %s (expiration ignores budgets and do-not-disrupt)", short(*x.After), stamp(x.At))
		case !x.At.IsZero():
			p.line(0, "Expiry: expireAfter %s: expires at %s (in %s)", short(*x.After), stamp(x.At), short(x.At.Sub(now)))
		}
	}

	if e.NodePool != "" {
		a := e.Attrition
		switch {
		case !a.Enabled && !a.Draining:
			p.line(0, "Attrition: off for NodePool %s", e.NodePool)
		case a.Draining:
			since := ""
			if !a.Since.IsZero() {
				since = " since " + stamp(a.Since)
			}
			p.line(0, "Attrition: draining%s (%s); waits for %s", since, maxWait(a.MaxWait), orNone(a.Protected))
		default:
			p.line(0, "Attrition: on for NodePool %s (%s); this node is not draining", e.NodePool, maxWait(a.MaxWait))
		}
	}
	if e.Budgets != nil {
		writeBudgets(p, e.NodePool, e.Budgets, now)
	}
	if e.BudgetError != "" {
		p.line(1, "error: %s", e.BudgetError)
	}
	return p.err
}

func writeBudgets(p *printer, pool string, r *budget.Result, now time.Time) {
	p.line(0, "Budgets of NodePool %s (%d node(s)), counting this loop's disruptions:", pool, r.Total)
	for _, reason := range budget.Reasons() {
		a := r.Allowances[reason]
		p.line(1, "%s: %d may start now: %s", reason, a.Allowed, a.Message)
	}
	for _, s := range r.Budgets {
		switch w := s.Window; {
		case s.Err != nil:
			p.line(1, "%s: invalid, allows nothing: %v", s, s.Err)
		case !w.Scheduled:
			p.line(1, "%s: always active, %d node(s)", s, s.Limit)
		case w.Active:
			p.line(1, "%s: active until %s, %d node(s)", s, stamp(w.Until), s.Limit)
		case !w.Next.IsZero():
			p.line(1, "%s: inactive, next active at %s (in %s)", s, stamp(w.Next), short(w.Next.Sub(now)))
		default:
			p.line(1, "%s: inactive", s)
		}
	}
}

// printer writes indented lines and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(indent int, format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, "%s%s\n", strings.Repeat("  ", indent), fmt.Sprintf(format, args...))
}

func resources(rl corev1.ResourceList) string {
	if len(rl) == 0 {
		return "none"
	}
	names := make([]string, 0, len(rl))
	for n := range rl {
		names = append(names, string(n))
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " " + instancetype.Format(corev1.ResourceName(n), rl[corev1.ResourceName(n)])
	}
	return strings.Join(parts, ", ")
}

func price(p float64) string {
	if p == 0 {
		return "unknown price"
	}
	return fmt.Sprintf("$%.4f/h", p)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func until(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	if t.After(now) {
		return fmt.Sprintf(" (lapses in %s)", short(t.Sub(now)))
	}
	return " (lapsed)"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "no protected pods"
	}
	return strings.Join(ss, ", ")
}

func others(all []string, self string) []string {
	var out []string
	for _, s := range all {
		if s != self {
			out = append(out, s)
		}
	}
	return out
}

// short writes a duration to the second without trailing zero units:
// 720h, 1h30m, 6m.
func short(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func maxWait(v string) string {
	if v == "" {
		return "no maximum wait"
	}
	return "maximum wait " + v
}

package budget

import (
	"errors"
	"fmt"
	"time"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// Reasons are the disruption reasons budgets govern, in a fixed order.
func Reasons() []karpv1.DisruptionReason {
	return []karpv1.DisruptionReason{
		karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonUnderutilized, karpv1.DisruptionReasonDrifted,
	}
}

// defaultBudget is what Karpenter's CRD fills in for a NodePool without
// budgets.
var defaultBudget = karpv1.Budget{Nodes: "10%"}

// Input is what Evaluate needs to know of a NodePool.
type Input struct {
	NodePool *karpv1.NodePool
	// Total is the number of the NodePool's nodes, those being disrupted
	// included; percentages are of it.
	Total int
	// Disrupting counts the NodePool's nodes being disrupted now by the
	// reason they are. Keys other than Reasons() (expiration, a user's
	// delete, "") are disruptions that no budget governs; they count against
	// every budget.
	Disrupting map[karpv1.DisruptionReason]int
	// Started holds when the NodePool's recent disruptions began, for the
	// disruption-rate annotation. Starts older than its window are ignored.
	Started []time.Time
}

// Allowance is what the budgets leave for one reason.
type Allowance struct {
	// Allowed is how many more nodes may begin a disruption for the reason
	// now.
	Allowed int
	// Limit is the binding budget's nodes; Total when no active budget
	// applies to the reason.
	Limit int
	// Budget is the index in spec.disruption.budgets of the binding budget;
	// -1 for the default budget or when none applies.
	Budget int
	// Disrupting is the number of nodes counted against Limit.
	Disrupting int
	// Rate is how many disruptions the disruption-rate annotation still lets
	// start; -1 without the annotation.
	Rate int
	// Message says in words what bound Allowed.
	Message string
}

// BudgetState is one budget as seen at an instant.
type BudgetState struct {
	// Index is the budget's place in spec.disruption.budgets; -1 for the
	// default budget of a NodePool without budgets.
	Index  int
	Budget karpv1.Budget
	// Limit is how many nodes the budget allows in all; 0 when invalid.
	Limit  int
	Window Window
	// Err is why the budget could not be read; it then applies, allowing 0.
	Err error
}

// applies says whether the budget caps disruptions for reason now.
func (s BudgetState) applies(reason karpv1.DisruptionReason) bool {
	return (s.Window.Active || s.Err != nil) && (len(s.Budget.Reasons) == 0 || hasReason(s.Budget.Reasons, reason))
}

// Result is what a NodePool's budgets allow at an instant.
type Result struct {
	Total int
	// Allowances holds one entry per Reasons().
	Allowances map[karpv1.DisruptionReason]Allowance
	// Budgets are the NodePool's budgets, or the default one, in order.
	Budgets []BudgetState
	// Independent says each budget counted only its own reasons'
	// disruptions (IndependentReasonBudgetsAnnotation).
	Independent bool
	// NextChange is when a budget window next opens or closes or a rate slot
	// frees, so that the caller can look again then; zero if never. It may be
	// early, never late.
	NextChange time.Time
}

// Allowed is how many nodes may begin a disruption for reason now; 0 for a
// reason budgets do not know.
func (r Result) Allowed(reason karpv1.DisruptionReason) int { return r.Allowances[reason].Allowed }

// Evaluate applies a NodePool's budgets at now, for every reason at once. For
// each reason it takes the active budgets that apply to it, takes from each
// the nodes being disrupted, and keeps the smallest, floored at 0; with no
// active budget every node not already disrupting may go. The result is
// always usable: the error lists budgets and annotations that could not be
// read (as *FieldError), which were taken to allow nothing.
func Evaluate(in Input, now time.Time) (Result, error) {
	var (
		name        string
		annotations map[string]string
		budgets     []karpv1.Budget
	)
	if in.NodePool != nil {
		name, annotations, budgets = in.NodePool.Name, in.NodePool.Annotations, in.NodePool.Spec.Disruption.Budgets
	}
	total := max(in.Total, 0)
	res := Result{Total: total, Allowances: map[karpv1.DisruptionReason]Allowance{}}
	var errs []error
	independent, err := independentReasons(annotations)
	if err != nil {
		errs = append(errs, err)
	}
	res.Independent = independent
	rate, hasRate, rateErr := annotatedRate(annotations)
	if rateErr != nil {
		errs = append(errs, rateErr)
	}
	res.Budgets = judge(budgets, total, now)
	for _, s := range res.Budgets {
		if s.Err != nil {
			errs = append(errs, s.Err)
		} else if c := s.Window.Change(); s.Window.Scheduled {
			res.NextChange = earliest(res.NextChange, c, now)
		}
	}
	var rs RateState
	if hasRate {
		rs = rate.At(in.Started, now)
		res.NextChange = earliest(res.NextChange, rs.Freed, now)
	}
	for _, reason := range Reasons() {
		a := allowance(res.Budgets, reason, total, in.Disrupting, independent, now)
		if hasRate {
			a.Rate = rs.Remaining
			if rs.Remaining < a.Allowed {
				a.Allowed = rs.Remaining
				a.Message = rs.message(rateErr, now)
			}
		}
		res.Allowances[reason] = a
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("NodePool %s: %w", name, errors.Join(errs...))
	}
	return res, nil
}

// judge reads every budget at now; a NodePool without budgets gets the
// default one.
func judge(budgets []karpv1.Budget, total int, now time.Time) []BudgetState {
	if len(budgets) == 0 {
		limit, _ := Nodes(defaultBudget.Nodes, total)
		return []BudgetState{{Index: -1, Budget: defaultBudget, Limit: limit, Window: Window{Active: true}}}
	}
	out := make([]BudgetState, len(budgets))
	for i, b := range budgets {
		s := BudgetState{Index: i, Budget: b}
		w, err := WindowAt(b, now)
		if fe := (*FieldError)(nil); errors.As(err, &fe) {
			s.Err = budgetField(i, fe.Field, fe.Value, fe.Err)
		} else if limit, err := Nodes(b.Nodes, total); err != nil {
			s.Err = budgetField(i, "nodes", b.Nodes, err)
		} else {
			s.Window, s.Limit = w, limit
		}
		out[i] = s
	}
	return out
}

// allowance finds the budget that leaves the fewest disruptions for reason.
func allowance(states []BudgetState, reason karpv1.DisruptionReason, total int, disrupting map[karpv1.DisruptionReason]int, independent bool, now time.Time) Allowance {
	all := counted(disrupting, nil)
	best := Allowance{Allowed: max(total-all, 0), Limit: total, Budget: -1, Disrupting: all, Rate: -1,
		Message: fmt.Sprintf("no active budget applies to %s; %d of %d nodes already disrupting", reason, all, total)}
	found := false
	for _, s := range states {
		if !s.applies(reason) {
			continue
		}
		d := all
		if independent {
			d = counted(disrupting, s.Budget.Reasons)
		}
		if allowed := max(s.Limit-d, 0); !found || allowed < best.Allowed {
			found = true
			best = Allowance{Allowed: allowed, Limit: s.Limit, Budget: s.Index, Disrupting: d, Rate: -1,
				Message: s.explain(total, d, now)}
		}
	}
	return best
}

// counted sums the nodes being disrupted for reasons (all, when empty) and
// for reasons that no budget governs.
func counted(disrupting map[karpv1.DisruptionReason]int, reasons []karpv1.DisruptionReason) int {
	n := 0
	for r, c := range disrupting {
		if len(reasons) == 0 || hasReason(reasons, r) || !hasReason(Reasons(), r) {
			n += max(c, 0)
		}
	}
	return n
}

func hasReason(rs []karpv1.DisruptionReason, r karpv1.DisruptionReason) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// earliest is the earlier of a and b, counting only times after now.
func earliest(a, b, now time.Time) time.Time {
	if b.IsZero() || !b.After(now) {
		return a
	}
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

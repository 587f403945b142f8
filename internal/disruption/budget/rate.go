package budget

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Annotations of a NodePool that change how its budgets count. Both are
// nodewright's own and opt-in; docs/extensions.md describes them.
const (
	// IndependentReasonBudgetsAnnotation set to "true" makes each budget
	// count only the nodes being disrupted for the reasons it names, so a
	// budget for Drifted does not use up one for Underutilized.
	IndependentReasonBudgetsAnnotation = "nodewright.dev/independent-reason-budgets"
	// DisruptionRateAnnotation "N/WINDOW" (such as "3/1h") lets at most N of
	// the NodePool's disruptions start within any trailing WINDOW.
	DisruptionRateAnnotation = "nodewright.dev/disruption-rate"
)

// Rate caps how many disruptions may start within a trailing window.
type Rate struct {
	Nodes  int
	Window time.Duration
}

func (r Rate) String() string { return fmt.Sprintf("%d/%s", r.Nodes, shortDuration(r.Window)) }

// ParseRate reads a disruption-rate annotation value "N/WINDOW": N a count,
// WINDOW a positive Go duration such as "1h" or "90m".
func ParseRate(value string) (Rate, error) {
	n, w, ok := strings.Cut(value, "/")
	if !ok {
		return Rate{}, errors.New(`want "N/WINDOW" such as "3/1h"`)
	}
	nodes, err := digits(n)
	if err != nil {
		return Rate{}, fmt.Errorf(`want "N/WINDOW" such as "3/1h", N a count: %w`, err)
	}
	window, err := time.ParseDuration(w)
	if err != nil {
		return Rate{}, fmt.Errorf(`want "N/WINDOW" such as "3/1h", WINDOW a duration: %w`, err)
	}
	if window <= 0 {
		return Rate{}, errors.New(`want "N/WINDOW" such as "3/1h", WINDOW longer than 0`)
	}
	return Rate{Nodes: nodes, Window: window}, nil
}

// RateState is what a Rate leaves at an instant.
type RateState struct {
	Rate Rate
	// Started is how many disruptions started within the trailing window.
	Started int
	// Remaining is how many more may start now.
	Remaining int
	// Freed is when Remaining next grows, zero if never.
	Freed time.Time
}

// At applies the rate at now, given when recent disruptions started. A
// start at t counts while t > now-Window, that is for Window from t; starts
// later than now (clock skew) count too.
func (r Rate) At(started []time.Time, now time.Time) RateState {
	from := now.Add(-r.Window)
	var ends []time.Time
	for _, t := range started {
		if t.After(from) {
			ends = append(ends, t.Add(r.Window))
		}
	}
	slices.SortFunc(ends, time.Time.Compare)
	s := RateState{Rate: r, Started: len(ends), Remaining: max(r.Nodes-len(ends), 0)}
	switch {
	case r.Nodes == 0 || len(ends) == 0:
	case len(ends) < r.Nodes:
		s.Freed = ends[0]
	default:
		// Started-Nodes+1 starts must leave the window before one may begin.
		s.Freed = ends[len(ends)-r.Nodes]
	}
	return s
}

func (s RateState) message(err error, now time.Time) string {
	if err != nil {
		return fmt.Sprintf("%s is invalid and allows no disruption: %v", DisruptionRateAnnotation, err)
	}
	if s.Rate.Nodes == 0 {
		return fmt.Sprintf("disruption rate %s allows none", s.Rate)
	}
	m := fmt.Sprintf("disruption rate %s leaves %d: %d started in the last %s",
		s.Rate, s.Remaining, s.Started, shortDuration(s.Rate.Window))
	if !s.Freed.IsZero() {
		m += "; another may start at " + clock(s.Freed, now)
	}
	return m
}

// annotatedRate reads the NodePool's rate annotation; ok is false without
// one.
func annotatedRate(annotations map[string]string) (r Rate, ok bool, err error) {
	v, ok := annotations[DisruptionRateAnnotation]
	if !ok {
		return Rate{}, false, nil
	}
	r, err = ParseRate(v)
	if err != nil {
		return Rate{}, true, annotationField(DisruptionRateAnnotation, v, err)
	}
	return r, true, nil
}

// independentReasons reads the NodePool's independent-reason-budgets
// annotation. A value other than "true" or "false" is an error and reads as
// "false", Karpenter's way, which counts more and so allows less.
func independentReasons(annotations map[string]string) (bool, error) {
	switch v, ok := annotations[IndependentReasonBudgetsAnnotation]; {
	case !ok || v == "false":
		return false, nil
	case v == "true":
		return true, nil
	default:
		return false, annotationField(IndependentReasonBudgetsAnnotation, v, errors.New(`want "true" or "false"`))
	}
}

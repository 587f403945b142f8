package planner

import (
	"fmt"
	"sort"
	"time"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// Proposal is since when consolidation has chosen a NodeClaim, for the same
// reason and method, in every loop.
type Proposal struct {
	Reason Reason
	Method Method
	Since  time.Time
}

// Proposals are the NodeClaims consolidation chose in the last loop, by
// name. The controller keeps them between loops; they are lost on a
// restart, which only makes the next decision wait again.
type Proposals map[string]Proposal

// Validate holds consolidation back until it has decided the same thing for
// delay: a pod that was on its way when the snapshot was taken (a
// Deployment scaling up, a Job starting) shows up meanwhile, and a
// decision that no longer holds is not made again, so it is dropped.
// Karpenter waits 15 s the same way.
//
// A consolidation command acts once every one of its claims has been
// chosen, for the same reason and method, in each loop for at least delay.
// An Empty command acts for its claims that have, and waits for the rest;
// any other waits whole (its replacements and moves are worked out for all
// its nodes together). Commands that are not consolidation (drift,
// expiration, drain by attrition) act at once, as does everything when
// delay is 0. Validate returns the commands to carry out now, those that
// wait, and the proposals for the next loop.
//
// held are decisions a budget keeps from acting (Plan.HeldByBudget): their
// claims' validation goes on, so that they act as soon as the budget
// allows, but they are not returned.
func Validate(cmds []Command, held []Command, prev Proposals, now time.Time, delay time.Duration) (act, wait []Command, next Proposals) {
	next = Proposals{}
	if delay > 0 {
		for _, cmd := range held {
			for _, claim := range cmd.Claims {
				next[claim] = proposal(prev, claim, cmd, now)
			}
		}
	}
	for _, cmd := range cmds {
		if !cmd.Consolidation || delay <= 0 {
			act = append(act, cmd)
			continue
		}
		var ready, early []int
		for i, claim := range cmd.Claims {
			p := proposal(prev, claim, cmd, now)
			next[claim] = p
			if now.Sub(p.Since) >= delay {
				ready = append(ready, i)
			} else {
				early = append(early, i)
			}
		}
		switch {
		case len(early) == 0:
			act = append(act, cmd)
		case len(ready) == 0 || cmd.Reason != karpv1.DisruptionReasonEmpty || cmd.Method != Delete:
			wait = append(wait, cmd)
		default:
			act = append(act, cmd.only(ready))
			wait = append(wait, cmd.only(early))
		}
	}
	return act, wait, next
}

// proposal is claim's proposal for cmd: the earlier one if it was for the
// same reason and method, else one from now.
func proposal(prev Proposals, claim string, cmd Command, now time.Time) Proposal {
	if p, ok := prev[claim]; ok && p.Reason == cmd.Reason && p.Method == cmd.Method {
		return p
	}
	return Proposal{Reason: cmd.Reason, Method: cmd.Method, Since: now}
}

// ReadyAt is when a waiting command would act: when its last claim has
// been chosen for delay.
func (p Proposals) ReadyAt(cmd Command, delay time.Duration) time.Time {
	var at time.Time
	for _, c := range cmd.Claims {
		if t := p[c].Since.Add(delay); t.After(at) {
			at = t
		}
	}
	return at
}

// only is cmd for the claims at the given indexes (a Delete; it has no
// replacements to share out).
func (cmd Command) only(idx []int) Command {
	sort.Ints(idx)
	out := cmd
	out.Claims, out.Nodes, out.Pools = nil, nil, nil
	for _, i := range idx {
		out.Claims = append(out.Claims, cmd.Claims[i])
		out.Nodes = append(out.Nodes, cmd.Nodes[i])
		out.Pools = append(out.Pools, cmd.Pools[i])
	}
	return out
}

// MarkWaiting shows, on the candidates of commands Validate held back, that
// they are chosen and when they would go.
func (p *Plan) MarkWaiting(wait []Command, props Proposals, delay time.Duration) {
	byClaim := map[string]int{}
	for i, c := range p.Candidates {
		byClaim[c.Claim] = i
	}
	for _, cmd := range wait {
		at := props.ReadyAt(cmd, delay)
		for _, claim := range cmd.Claims {
			i, ok := byClaim[claim]
			if !ok {
				continue
			}
			p.Candidates[i].State = "Validating"
			p.Candidates[i].Blockers = []string{fmt.Sprintf("chosen for %s (%s); goes at %s UTC if every loop until then decides the same",
				cmd.Reason, cmd.Message, at.UTC().Format(time.TimeOnly))}
		}
	}
}

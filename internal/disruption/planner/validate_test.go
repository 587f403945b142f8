package planner

import (
	"fmt"
	"testing"
	"time"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func TestValidateHoldsConsolidationUntilDecidedAgain(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	const delay = 15 * time.Second
	cmd := func(reason Reason, method Method, consolidation bool, claims ...string) Command {
		c := Command{Reason: reason, Method: method, Consolidation: consolidation}
		for _, n := range claims {
			c.Claims, c.Nodes, c.Pools = append(c.Claims, n), append(c.Nodes, "node-"+n), append(c.Pools, "pool")
		}
		return c
	}
	empty := func(claims ...string) Command { return cmd(karpv1.DisruptionReasonEmpty, Delete, true, claims...) }
	under := func(m Method, claims ...string) Command {
		return cmd(karpv1.DisruptionReasonUnderutilized, m, true, claims...)
	}
	since := func(ago time.Duration, r Reason, m Method) Proposal {
		return Proposal{Reason: r, Method: m, Since: t0.Add(-ago)}
	}
	for _, tc := range []struct {
		name       string
		cmds       []Command
		held       []Command
		prev       Proposals
		delay      time.Duration
		act, wait  string // claims of each command, as fmt prints them
		nextSinces map[string]time.Duration
	}{
		{name: "first seen waits", cmds: []Command{empty("a")}, delay: delay,
			act: "[]", wait: "[[a]]", nextSinces: map[string]time.Duration{"a": 0}},
		{name: "decided again after the delay acts", cmds: []Command{empty("a")}, delay: delay,
			prev: Proposals{"a": since(16*time.Second, karpv1.DisruptionReasonEmpty, Delete)},
			act:  "[[a]]", wait: "[]", nextSinces: map[string]time.Duration{"a": 16 * time.Second}},
		{name: "decided again too soon still waits", cmds: []Command{under(Replace, "a")}, delay: delay,
			prev: Proposals{"a": since(5*time.Second, karpv1.DisruptionReasonUnderutilized, Replace)},
			act:  "[]", wait: "[[a]]", nextSinces: map[string]time.Duration{"a": 5 * time.Second}},
		{name: "another decision for the claim starts over", cmds: []Command{under(Replace, "a")}, delay: delay,
			prev: Proposals{"a": since(time.Minute, karpv1.DisruptionReasonUnderutilized, Delete)},
			act:  "[]", wait: "[[a]]", nextSinces: map[string]time.Duration{"a": 0}},
		{name: "an empty command acts for its ready claims", cmds: []Command{empty("a", "b", "c")}, delay: delay,
			prev: Proposals{"a": since(20*time.Second, karpv1.DisruptionReasonEmpty, Delete), "c": since(15*time.Second, karpv1.DisruptionReasonEmpty, Delete)},
			act:  "[[a c]]", wait: "[[b]]", nextSinces: map[string]time.Duration{"a": 20 * time.Second, "b": 0, "c": 15 * time.Second}},
		{name: "a multi-node command waits whole", cmds: []Command{under(Delete, "a", "b")}, delay: delay,
			prev: Proposals{"a": since(20*time.Second, karpv1.DisruptionReasonUnderutilized, Delete)},
			act:  "[]", wait: "[[a b]]", nextSinces: map[string]time.Duration{"a": 20 * time.Second, "b": 0}},
		{name: "claims no longer chosen are forgotten", cmds: nil, delay: delay,
			prev: Proposals{"a": since(20*time.Second, karpv1.DisruptionReasonEmpty, Delete)},
			act:  "[]", wait: "[]", nextSinces: map[string]time.Duration{}},
		{name: "drift and expiration act at once", delay: delay,
			cmds: []Command{cmd(karpv1.DisruptionReasonDrifted, Replace, false, "d"), cmd(ReasonExpired, Delete, false, "e")},
			act:  "[[d] [e]]", wait: "[]", nextSinces: map[string]time.Duration{}},
		{name: "a node a budget holds keeps validating, and does not act", cmds: []Command{empty("a")}, delay: delay,
			held: []Command{empty("b"), empty("c")},
			prev: Proposals{"b": since(20*time.Second, karpv1.DisruptionReasonEmpty, Delete)},
			act:  "[]", wait: "[[a]]", nextSinces: map[string]time.Duration{"a": 0, "b": 20 * time.Second, "c": 0}},
		{name: "no delay acts at once", cmds: []Command{empty("a")}, delay: 0,
			act: "[[a]]", wait: "[]", nextSinces: map[string]time.Duration{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			act, wait, next := Validate(tc.cmds, tc.held, tc.prev, t0, tc.delay)
			if got := claimsOf(act); got != tc.act {
				t.Errorf("act %s, want %s", got, tc.act)
			}
			if got := claimsOf(wait); got != tc.wait {
				t.Errorf("wait %s, want %s", got, tc.wait)
			}
			if len(next) != len(tc.nextSinces) {
				t.Errorf("next proposals %v, want %d", next, len(tc.nextSinces))
			}
			for claim, ago := range tc.nextSinces {
				if p, ok := next[claim]; !ok || !p.Since.Equal(t0.Add(-ago)) {
					t.Errorf("claim %s proposed since %v, want %v", claim, p.Since, t0.Add(-ago))
				}
			}
			for _, c := range append(act, wait...) {
				for i := range c.Claims {
					if c.Nodes[i] != "node-"+c.Claims[i] {
						t.Errorf("claim %s paired with node %s after the split", c.Claims[i], c.Nodes[i])
					}
				}
			}
		})
	}
}

func claimsOf(cmds []Command) string {
	out := [][]string{}
	for _, c := range cmds {
		out = append(out, c.Claims)
	}
	return fmt.Sprint(out)
}
